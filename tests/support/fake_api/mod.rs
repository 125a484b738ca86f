//! A fake Kubernetes API server: a test double, not a cluster. It serves real Kubernetes JSON
//! over HTTPS (its own CA, made with rcgen) on loopback, checks bearer tokens, keeps objects
//! by their API path (create, get, list with field selectors, merge patch, delete), issues
//! service-account tokens (TokenRequest, and the token controller for legacy token secrets),
//! evicts pods (429 while a PodDisruptionBudget forbids it), answers 401/403/404/409/429 where
//! a real server would, serves discovery for `kubectl`, and records requests.

pub mod dataplane;
pub mod diags;
mod fields;
mod namespace_controller;
mod pod_security;
mod proto;
pub mod rbac;
mod scheduler;
mod serve;
mod token_review;

use base64::Engine;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The state (a handler's panic poisons it, failing the test at its next request).
pub(crate) fn lock_state(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().expect("the fake API server's state")
}

/// A write an admission webhook denies (`State::webhook_denials`).
pub struct WebhookDenial {
    pub verb: String,
    pub resource: String,
    pub webhook: String,
    pub message: String,
}

/// The objects and rules the server answers from.
pub struct State {
    /// Objects by path, like `/api/v1/namespaces/calico-system`.
    pub objects: BTreeMap<String, Value>,
    /// Calico's resources served as `projectcalico.org/v3` CRDs, with no
    /// `crd.projectcalico.org` group (`FakeApi::serve_calico_v3`).
    pub calico_v3: bool,
    /// With `calico_v3`, the `crd.projectcalico.org` CRDs still served beside (a datastore
    /// migration before its clean-up deletes them).
    pub calico_v1_kept: bool,
    /// Fields the served CRD's structural schema does not know, by resource plural, as
    /// dotted paths (`spec.calicoNetwork.windowsDataplane` for an operator older than
    /// release-v1.32): a write drops them ("Field pruning", Kubernetes'
    /// CustomResourceDefinition docs), or, asked `fieldValidation=Strict`, is refused with a
    /// 400 naming the first (apiextensions-apiserver's strict decoding, Kubernetes 1.27).
    pub unknown_fields: BTreeMap<String, Vec<String>>,
    /// Whether `fieldValidation=Strict` is honoured (a server before Kubernetes 1.25 ignores
    /// the parameter and drops the fields all the same).
    pub strict_validation: bool,
    /// `(verb, resource)` pairs the identity may not do: requests get 403, access reviews
    /// `allowed: false`. A subresource is named `serviceaccounts/token`.
    pub forbidden: Vec<(String, String)>,
    /// Writes an admission webhook denies (`FakeApi::deny_by_webhook`), after RBAC allowed
    /// them, as admission comes after authorization.
    pub webhook_denials: Vec<WebhookDenial>,
    /// How far the API server's clock is from this host's, in seconds: its `Date` and the
    /// `creationTimestamp` it gives (clock skew between the two).
    pub clock_offset_s: i64,
    /// Answers without a `Date` header. Go's net/http adds one to every response unless the
    /// handler suppresses it (its `ResponseWriter.Header` documentation: "To suppress
    /// automatic response headers (such as "Date"), set their value to nil"), and a proxy in
    /// front of the API server may drop it: a client must not count on it.
    pub no_date: bool,
    /// `GET /api` (the client's look at the server's `Date`) gets no answer: its connection is
    /// closed at once, as a network blip or a load balancer's reset on the way ends it, and
    /// the client's call fails at once.
    pub api_dropped: bool,
    /// Every request held, not applied, while this is set: a server (or its etcd) so slow
    /// that a client's calls run into their own bounds. Once it is cleared, each one held is
    /// answered 503 and not applied (`FakeApi::hold_write_at`'s end), so that a request the
    /// client gave up on changes nothing later.
    pub stalled: bool,
    /// How many requests came while the server stalled.
    pub stalled_held: usize,
    /// The first request of this method and path is applied, then its answer held until this
    /// is cleared: a write the server committed whose answer did not reach the client before
    /// it gave up waiting (a slow or lost answer on the way back; HTTP gives a client no way
    /// to tell that from a write never made).
    pub stall_answer_to: Option<(String, String)>,
    /// How many answers were held (`stall_answer_to`): at most one.
    pub answers_held: usize,
    /// Objects another client deletes and makes again (a new uid and resourceVersion, created
    /// now) just before this client's next delete or update of them arrives: a race between
    /// two clients.
    pub made_again_before_write: BTreeSet<String>,
    /// Objects another client writes (their content the same, their resourceVersion moved)
    /// just before each of this client's next updates of them arrives, so many times.
    pub touched_before_update: BTreeMap<String, usize>,
    /// Objects another client writes (their content the same, their resourceVersion moved)
    /// just before each of this client's next deletes of them arrives, so many times: a
    /// delete whose `preconditions.resourceVersion` was read before that write is refused.
    pub touched_before_delete: BTreeMap<String, usize>,
    /// The DeleteOptions of every DELETE, by object path, in order.
    pub delete_options: Vec<(String, Value)>,
    /// Objects whose status another client writes just before this client's next patch of
    /// them arrives: the resourceVersion moves, the spec stays (the Tigera operator writes the
    /// Installation's status on its reconciles: tigera/operator `core_controller.go`,
    /// `r.status.SetDegraded` ... `Status().Update`; the status subresource shares the
    /// object's resourceVersion).
    pub status_written_before_patch: BTreeSet<String>,
    /// Every request: method and path.
    pub requests: Vec<(String, String)>,
    /// Every POST's path and query string.
    pub post_queries: Vec<(String, String)>,
    /// Bearer tokens the server accepts: the admin's and every token it issued.
    pub tokens: BTreeSet<String>,
    /// The longest token lifetime it grants (`--service-account-max-token-expiration`).
    pub max_token_seconds: Option<i64>,
    /// Whether the token controller fills new service-account token secrets.
    pub token_controller: bool,
    /// Pods whose eviction a PodDisruptionBudget refuses (429), by `namespace/name`.
    pub eviction_blocked: BTreeSet<String>,
    /// How a budget refuses them, as kube-apiserver's eviction REST
    /// (`pkg/registry/core/pod/storage/eviction.go`): 0, `checkAndDecrement` with no disruption
    /// allowed (`NewTooManyRequests(..., 0)`: no Retry-After); N > 0, `createTooManyRequestsError`
    /// for a budget the controller has not processed yet (Retry-After N, 10 there).
    pub pdb_retry_after: u64,
    /// The body of every eviction request, in order.
    pub evictions: Vec<Value>,
    /// When each eviction request arrived, in order.
    /// Each eviction's path and when it was asked.
    pub eviction_times: Vec<(String, std::time::Instant)>,
    /// How long the server takes over each eviction (to see how many are in flight at once).
    pub eviction_delay: std::time::Duration,
    /// Eviction requests being answered now, and the most there were at once.
    pub in_flight: usize,
    pub max_in_flight: usize,
    /// The next this many eviction requests get an overloaded server's 429 (API Priority and
    /// Fairness: Retry-After, no DisruptionBudget cause).
    pub throttle: usize,
    /// A broken server: every page of a list says there is more (a continue token forever).
    pub endless_lists: bool,
    /// TCP connections accepted.
    pub connections: usize,
    /// How many seconds the server's clock is behind the node's (ahead when negative): the
    /// `iat`, `exp` and `expirationTimestamp` of the tokens it issues are shifted by it, as a
    /// kube-apiserver whose clock differs from the node's stamps them by its own clock.
    pub clock_behind: i64,
    /// Issue tokens that are no JWT (an opaque string), with their expiry in the answer's
    /// `expirationTimestamp` only: what a client of the TokenRequest API may meet, whose
    /// `status.token` is documented as opaque (authentication/v1 TokenRequestStatus: "Token
    /// is the opaque bearer token").
    pub opaque_tokens: bool,
    /// The service-account issuer it signs tokens with and announces at
    /// `/.well-known/openid-configuration`; a token of another issuer is refused.
    pub issuer: String,
    /// Binds tokens to Nodes as kube-apiserver does by default from 1.31 (GA in 1.33); `false` refuses a Node as
    /// `boundObjectRef` as older servers do.
    pub node_binding: bool,
    /// Writes (requests other than reads and access reviews) answered so far, and the one
    /// that gets a 500 (`FakeApi::fail_write_at`).
    pub writes_seen: usize,
    pub fail_write: Option<usize>,
    /// The write applied and then answered 504 (`FakeApi::timeout_write_at`).
    pub timeout_write: Option<usize>,
    /// The write refused with 429 by API Priority and Fairness, not applied
    /// (`FakeApi::throttle_write_at`).
    pub throttle_write: Option<usize>,
    /// The create whose answer is lost before it commits, and then applied after the next
    /// reads of it (`FakeApi::late_write_at`): its path, its body and the reads seen.
    pub late_write: Option<usize>,
    pub late: Option<(String, Value, usize)>,
    /// The write held until it is cleared (`FakeApi::hold_write_at`), and whether it came.
    pub hold_write: Option<usize>,
    pub held: bool,
    /// Whether the held write is then served as any other (`FakeApi::pause_write_at`): the
    /// test changes something while the client waits on it.
    pub pass_held: bool,
    /// Appended to the uid of each object created from now (`-N`): kube-apiserver gives every
    /// object it creates a new uid (`rest.FillObjectMetaSystemFields`, `uuid.NewUUID()`), so
    /// one deleted and made again under its name is another object; the name-derived uids
    /// otherwise stand for that.
    pub uid_generation: u32,
    /// The namespace controller reaches a pod of a namespace being deleted (its
    /// `deletionTimestamp` set, kube-controller-manager's namespaced-resources deleter deleting
    /// the namespace's pods) right after the first eviction of it refused there.
    pub marks_after_refusal: bool,
    /// What the nodes do with pods, Services, NetworkPolicies and the pod proxy (`verify`).
    pub dataplane: dataplane::Dataplane,
    /// Tests' scripted events (`FakeApi::when`), not modelled behaviours.
    pub scripted: Vec<Scripted>,
    /// The fleet DaemonSet's pods' diagnostics endpoints, by `namespace/pod` (`fleet diags`).
    pub diags: BTreeMap<String, diags::Endpoint>,
    /// What each `GET /diags` carried in `diags_auth::HEADER`, by `namespace/pod`, in order.
    pub diags_tokens: Vec<(String, Option<String>)>,
    /// The CA certificate, as the token controller puts it into `ca.crt`.
    ca_pem: String,
    /// Counts issued tokens, so each is different.
    issued: u64,
}

/// A test's scripted event, not a modelled behaviour: what the test does, under the server's
/// lock, when the `nth` request of `method` (any, when empty) whose path starts with `prefix`
/// arrives, once `seen` holds of the state, before that request is served. A test that waits
/// from outside (polling) for a state the client passes through may miss it on a loaded
/// machine, and one that acts after a pause of its own may act before the client even
/// started; an event taken here, between two requests of the client, neither misses nor
/// precedes them.
pub struct Scripted {
    pub method: String,
    pub prefix: String,
    pub nth: usize,
    pub seen: Option<Seen>,
    pub then: Box<dyn FnOnce(&mut State) + Send>,
}

/// What a scripted event waits to find true of the state.
pub type Seen = Box<dyn Fn(&State) -> bool + Send>;

impl Scripted {
    /// `then` at the `nth` request of `method` on `prefix` from now (scheduled by another
    /// event: counted from a request of the client's, not from the test's start).
    pub fn on(
        (method, prefix, nth): (&str, &str, usize),
        then: impl FnOnce(&mut State) + Send + 'static,
    ) -> Self {
        Self {
            method: method.into(),
            prefix: prefix.into(),
            nth,
            seen: None,
            then: Box::new(then),
        }
    }

    fn matches(&self, (method, path): (&str, &str), st: &State) -> bool {
        (self.method.is_empty() || self.method == method)
            && path.starts_with(&self.prefix)
            && self.seen.as_ref().is_none_or(|seen| seen(st))
    }
}

impl State {
    /// Counts `method` on `path` for each scripted event it matches, and takes those whose
    /// request it is, once (serve.rs).
    pub fn scripted_for(&mut self, method: &str, path: &str) {
        let (mut due, mut kept) = (Vec::new(), Vec::new());
        for mut s in std::mem::take(&mut self.scripted) {
            if s.matches((method, path), self) {
                s.nth = s.nth.saturating_sub(1);
                if s.nth == 0 {
                    due.push(s);
                    continue;
                }
            }
            kept.push(s);
        }
        // Events that these schedule go after those kept.
        self.scripted = kept;
        for event in due {
            (event.then)(self);
        }
    }
}

/// A running fake API server; it stops when dropped.
pub struct FakeApi {
    pub url: String,
    pub token: String,
    pub ca_pem: String,
    pub state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

/// The answer to one request: held while the server stalls (then a 503), else the handler's,
/// held on while its answer is (`State::stall_answer_to`), relayed, delayed and dated.
async fn answer_one(
    req: hyper::Request<hyper::body::Incoming>,
    st: &Arc<Mutex<State>>,
) -> serve::Reply {
    let stalled = || lock_state(st).stalled;
    let mut r = if stalled() {
        lock_state(st).stalled_held += 1;
        while stalled() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        serve::unavailable()
    } else {
        let asked = (req.method().to_string(), req.uri().path().to_owned());
        let held = {
            let mut s = lock_state(st);
            let hit = s.answers_held == 0 && s.stall_answer_to.as_ref() == Some(&asked);
            if hit {
                s.answers_held += 1;
            }
            hit
        };
        let r = serve::handle(req, st).await;
        while held && lock_state(st).stall_answer_to.is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        r
    };
    // A relay to a real pod endpoint, once the state is let go.
    if let Some(relay) = r.extensions_mut().remove::<diags::Relay>() {
        r = diags::relay(relay).await;
    }
    if let Some(serve::Delay(d)) = r.extensions().get::<serve::Delay>() {
        tokio::time::sleep(*d).await;
    }
    let (offset, no_date) = {
        let s = lock_state(st);
        (s.clock_offset_s, s.no_date)
    };
    // kube-apiserver's answers carry its clock (Go's net/http sets
    // `Date` on every response, RFC 9110 IMF-fixdate), unless a test
    // says it has none (`no_date`).
    if let Some(date) = serve::http_date(offset).filter(|_| !no_date) {
        r.headers_mut().insert("date", date);
    }
    r
}

/// A certificate authority made for one test.
pub struct TestCa {
    pub issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        Self {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).expect("ca"),
        }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A TLS acceptor for a loopback server (`localhost`, `127.0.0.1`) with a certificate of
    /// this CA; installs the one crypto provider the binary also uses.
    pub fn loopback_acceptor(&self, cn: &str) -> tokio_rustls::TlsAcceptor {
        self.acceptor(self.issue(cn, &["localhost", "127.0.0.1"]))
    }

    /// The same with a certificate that expired on 2021-01-01.
    pub fn expired_loopback_acceptor(&self, cn: &str) -> tokio_rustls::TlsAcceptor {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        let cert = params.signed_by(&key, &self.issuer).expect("cert");
        self.acceptor((cert.pem(), key.serialize_pem()))
    }

    fn acceptor(&self, (cert_pem, key_pem): (String, String)) -> tokio_rustls::TlsAcceptor {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let certs = rustls::pki_types::pem::PemObject::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<rustls::pki_types::CertificateDer>, _>>()
            .expect("cert pem");
        let key = <rustls::pki_types::PrivateKeyDer as rustls::pki_types::pem::PemObject>::from_pem_slice(key_pem.as_bytes())
            .expect("key pem");
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("tls config");
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }

    /// A certificate for `names` (DNS names or IPs) signed by this CA, and its key, as PEM.
    pub fn issue(&self, cn: &str, names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let cert = params.signed_by(&key, &self.issuer).expect("cert");
        (cert.pem(), key.serialize_pem())
    }
}

impl FakeApi {
    pub fn start() -> Self {
        Self::serving(false)
    }

    /// A server whose certificate (of its own CA) expired on 2021-01-01.
    pub fn start_with_an_expired_certificate() -> Self {
        Self::serving(true)
    }

    fn serving(expired: bool) -> Self {
        let ca = TestCa::new("fake-api-ca");
        let acceptor = if expired {
            ca.expired_loopback_acceptor("fake-api")
        } else {
            ca.loopback_acceptor("fake-api")
        };
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
        let state = Arc::new(Mutex::new(State {
            objects: BTreeMap::new(),
            calico_v3: false,
            calico_v1_kept: false,
            unknown_fields: BTreeMap::new(),
            strict_validation: true,
            forbidden: Vec::new(),
            webhook_denials: Vec::new(),
            clock_offset_s: 0,
            no_date: false,
            api_dropped: false,
            stalled: false,
            stalled_held: 0,
            timeout_write: None,
            throttle_write: None,
            late_write: None,
            late: None,
            stall_answer_to: None,
            answers_held: 0,
            made_again_before_write: BTreeSet::new(),
            touched_before_update: BTreeMap::new(),
            touched_before_delete: BTreeMap::new(),
            delete_options: Vec::new(),
            status_written_before_patch: BTreeSet::new(),
            requests: Vec::new(),
            post_queries: Vec::new(),
            tokens: BTreeSet::from([token.clone()]),
            max_token_seconds: None,
            token_controller: true,
            eviction_blocked: BTreeSet::new(),
            pdb_retry_after: 0,
            evictions: Vec::new(),
            eviction_times: Vec::new(),
            eviction_delay: std::time::Duration::ZERO,
            in_flight: 0,
            max_in_flight: 0,
            throttle: 0,
            endless_lists: false,
            connections: 0,
            clock_behind: 0,
            opaque_tokens: false,
            issuer: "https://kubernetes.default.svc".into(),
            node_binding: true,
            dataplane: dataplane::Dataplane::healthy(),
            scripted: Vec::new(),
            diags: BTreeMap::new(),
            diags_tokens: Vec::new(),
            ca_pem: ca.pem(),
            issued: 0,
            writes_seen: 0,
            fail_write: None,
            hold_write: None,
            held: false,
            pass_held: false,
            uid_generation: 0,
            marks_after_refusal: false,
        }));
        let st = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                lock_state(&st).connections += 1;
                let (acceptor, st) = (acceptor.clone(), st.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let st = st.clone();
                        async move {
                            if lock_state(&st).api_dropped && req.uri().path() == "/api" {
                                // hyper closes the connection on a service's error.
                                return Err(std::io::Error::other("connection dropped"));
                            }
                            Ok::<_, std::io::Error>(answer_one(req, &st).await)
                        }
                    });
                    // hyper adds a `Date` of its own unless told not to: the handler sets it
                    // (or, `no_date`, leaves it out).
                    let _ = hyper::server::conn::http1::Builder::new()
                        .auto_date_header(false)
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let api = Self {
            url: format!("https://127.0.0.1:{port}"),
            token,
            ca_pem: ca.pem(),
            state,
            _runtime: runtime,
        };
        api.bootstrap_rbac();
        api
    }

    /// What kube-apiserver's bootstrap policy lets every authenticated user do that this
    /// server serves: ClusterRole `system:basic-user` (create selfsubjectaccessreviews and
    /// selfsubjectrulesreviews) bound to the group `system:authenticated`
    /// (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, Kubernetes v1.33).
    fn bootstrap_rbac(&self) {
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        let mut role = meta(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "system:basic-user",
            None,
        );
        role["rules"] = json!([{"apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]}]);
        self.put(&format!("{rbac}/clusterroles/system:basic-user"), role);
        let mut binding = meta(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            "system:basic-user",
            None,
        );
        binding["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:basic-user"});
        binding["subjects"] = json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]);
        self.put(
            &format!("{rbac}/clusterrolebindings/system:basic-user"),
            binding,
        );
    }

    /// The ServiceAccount deleted and made again, with a new uid: every token issued for it
    /// is refused from now on (a Calico reinstall, an operator upgrade).
    pub fn recreate_service_account(&self, namespace: &str, name: &str) {
        let path = format!("/api/v1/namespaces/{namespace}/serviceaccounts/{name}");
        let mut st = self.lock();
        if let Some(o) = st.objects.get_mut(&path) {
            let uid = o["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
            o["metadata"]["uid"] = json!(format!("{uid}-again"));
        }
    }

    /// A pod's projected token for the service account `sa` on Node `node`, as kubelet gets it
    /// (its private claim names the Node: kube-apiserver 1.30 and later), a year long.
    pub fn pod_token(&self, namespace: &str, sa: &str, node: &str) -> String {
        let mut st = self.lock();
        let uid = st
            .objects
            .get(&format!("/api/v1/nodes/{node}"))
            .map_or(Value::Null, |n| n["metadata"]["uid"].clone());
        serve::issue(
            &mut st,
            namespace,
            sa,
            Some(365 * 86400),
            Some((node.to_owned(), uid)),
        )
    }

    /// Whether a request with this bearer token would be authenticated (or get 401).
    pub fn accepts(&self, token: &str) -> bool {
        serve::authenticates(&self.lock(), token)
    }

    /// Whether the server binds tokens to Nodes (by default from Kubernetes 1.31).
    pub fn set_node_binding(&self, on: bool) {
        self.lock().node_binding = on;
    }

    /// The service-account issuer changed: tokens of the old one are refused.
    pub fn set_issuer(&self, issuer: &str) {
        self.lock().issuer = issuer.to_owned();
    }

    /// The signing key rotated: every token the server issued is refused (the admin's stays).
    pub fn rotate_signing_key(&self) {
        let mut st = self.lock();
        st.tokens.retain(|t| t.starts_with("fake-admin-token-"));
    }

    /// Serves Calico's resources as a cluster installed with v3 CRDs does: every
    /// `crd.projectcalico.org/v1` object moved to `projectcalico.org/v3` (IPAMConfig becoming
    /// IPAMConfiguration, `ipamconfigurations`), and no `crd.projectcalico.org` group.
    pub fn serve_calico_v3(&self) {
        let mut st = self.lock();
        copy_calico_to_v3(&mut st, false, None);
        st.calico_v3 = true;
    }

    /// A datastore migration as kube-controllers' migration controller leaves the cluster in
    /// `phase` (tigera/docs `calico/operations/crd-migration.mdx`): the v3 CRDs served beside
    /// the v1 ones (the aggregated APIService deleted), the `DatastoreMigration` `v1-to-v3`.
    /// The locks follow projectcalico/calico release-v3.33
    /// `kube-controllers/pkg/controllers/migration/controller.go`: `handlePending` locks v1
    /// (`lockV1Datastore`, ClusterInformation `datastoreReady: false`) once its prechecks
    /// pass, `handleMigrating` locks v3 (`lockV3Datastore`), and at `Converged`
    /// `unlockV3CRDDatastore` unlocks v3 only: "The v1 ClusterInformation is intentionally
    /// left locked" (its only unlock is `handleAbort`'s, on a deletion before `Converged`).
    /// `Pending` is modelled before its prechecks passed: nothing locked yet.
    pub fn datastore_migration(&self, phase: &str) {
        let mut st = self.lock();
        let v3_ready = matches!(phase, "Pending" | "Converged" | "Complete");
        copy_calico_to_v3(&mut st, true, Some(v3_ready));
        if phase != "Pending" {
            let v1_info = "/apis/crd.projectcalico.org/v1/clusterinformations/default";
            if let Some(info) = st.objects.get_mut(v1_info) {
                info["spec"]["datastoreReady"] = json!(false);
            }
        }
        st.calico_v3 = true;
        st.calico_v1_kept = true;
        st.objects.insert(
            "/apis/migration.projectcalico.org/v1/datastoremigrations/v1-to-v3".into(),
            json!({"apiVersion": "migration.projectcalico.org/v1", "kind": "DatastoreMigration",
                "metadata": {"name": "v1-to-v3"}, "spec": {"type": "APIServerToCRDs"},
                "status": {"phase": phase}}),
        );
    }

    /// The migration's clean-up: the DatastoreMigration deleted, its finalizer deleting the
    /// `crd.projectcalico.org` CRDs and their objects.
    pub fn finish_datastore_migration(&self) {
        let mut st = self.lock();
        st.objects.retain(|k, _| {
            !k.starts_with("/apis/crd.projectcalico.org/")
                && !k.starts_with("/apis/migration.projectcalico.org/")
        });
        st.calico_v1_kept = false;
    }

    /// Stores an object at its API path.
    pub fn put(&self, path: &str, object: Value) {
        self.lock().objects.insert(path.to_owned(), object);
    }

    /// Stores a ServiceAccount or an RBAC object at the path the API server keeps it, as
    /// `kubectl apply` would; `false` for another kind (left out).
    pub fn apply(&self, object: &Value) -> bool {
        match rbac_path(object) {
            Some(path) => {
                self.put(&path, object.clone());
                true
            }
            None => false,
        }
    }

    /// The object at an API path.
    pub fn get(&self, path: &str) -> Option<Value> {
        self.lock().objects.get(path).cloned()
    }

    pub fn remove(&self, path: &str) {
        self.lock().objects.remove(path);
    }

    pub fn forbid(&self, verb: &str, resource: &str) {
        self.lock().forbidden.push((verb.into(), resource.into()));
    }

    /// A validating admission webhook `webhook` denies every `verb` (a write: webhooks are
    /// not called for reads) of `resource`, saying `message`.
    pub fn deny_by_webhook(&self, verb: &str, resource: &str, webhook: &str, message: &str) {
        self.lock().webhook_denials.push(WebhookDenial {
            verb: verb.into(),
            resource: resource.into(),
            webhook: webhook.into(),
            message: message.into(),
        });
    }

    pub fn requests(&self) -> Vec<(String, String)> {
        self.lock().requests.clone()
    }

    /// Requests other than reads: what the client changed or tried to change.
    pub fn writes(&self) -> Vec<(String, String)> {
        self.requests()
            .into_iter()
            .filter(|(m, p)| m != "GET" && !p.ends_with("/selfsubjectaccessreviews"))
            .collect()
    }

    /// POSTs `body` to `path` as the bearer of `token`, as any client of the API would (a
    /// plain HTTP/1.1 request over TLS, the server's CA trusted): the status code and the
    /// answer's JSON.
    pub fn post_as(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        self.send_as("POST", token, path, body)
    }

    /// GETs `path` as the bearer of `token`, as `post_as` POSTs.
    pub fn get_as(&self, token: &str, path: &str) -> (u16, Value) {
        self.send_as("GET", token, path, &Value::Null)
    }

    fn send_as(&self, method: &str, token: &str, path: &str, body: &Value) -> (u16, Value) {
        use std::io::{Read, Write};
        let der = pem::parse(&self.ca_pem).expect("ca pem").into_contents();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from(der))
            .expect("ca");
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("tls versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        let authority = self.url.trim_start_matches("https://");
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
        let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("tls");
        let tcp = std::net::TcpStream::connect(authority).expect("connect");
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        write!(
            tls,
            "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut answer = Vec::new();
        let _ = tls.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let json = text
            .find("\r\n\r\n")
            .and_then(|i| text[i + 4..].find('{').map(|j| &text[i + 4 + j..]))
            .and_then(|b| serde_json::Deserializer::from_str(b).into_iter().next())
            .and_then(Result::ok)
            .unwrap_or(Value::Null);
        (code, json)
    }

    /// The `n`th write from now (1: the next) fails with a 500, as a server whose etcd timed
    /// out answers; the writes before and after it are served.
    pub fn fail_write_at(&self, n: usize) {
        let mut st = self.lock();
        st.fail_write = Some(st.writes_seen + n);
    }

    /// The `n`th write from now is applied and then answered 504 Timeout, as kube-apiserver
    /// answers a write that committed after the request's deadline (`serve::handle`).
    pub fn timeout_write_at(&self, n: usize) {
        let mut st = self.lock();
        st.timeout_write = Some(st.writes_seen + n);
    }

    /// The `n`th write from now is refused with 429 before anything is written, as API
    /// Priority and Fairness refuses a request ahead of its handler.
    pub fn throttle_write_at(&self, n: usize) {
        let mut st = self.lock();
        st.throttle_write = Some(st.writes_seen + n);
    }

    /// The `n`th write from now (a create) is answered 504 before it commits, and commits
    /// after the client's next two reads of the object (`serve::handle`).
    pub fn late_write_at(&self, n: usize) {
        let mut st = self.lock();
        st.late_write = Some(st.writes_seen + n);
    }

    /// The `n`th write from now is held, not applied, until `release_write` (a client to be
    /// killed while it waits on that call).
    pub fn hold_write_at(&self, n: usize) {
        let mut st = self.lock();
        st.hold_write = Some(st.writes_seen + n);
        st.held = false;
    }

    /// The `n`th write from now waits until `release_write`, then is served as any other.
    pub fn pause_write_at(&self, n: usize) {
        self.hold_write_at(n);
        self.lock().pass_held = true;
    }

    /// Lets a held write go (it is answered 503, not applied, unless `pause_write_at` held it).
    pub fn release_write(&self) {
        self.lock().hold_write = None;
    }

    /// Scripts `then` for the first `method` request whose path starts with `prefix`: run
    /// under the server's lock before that request is served (`Scripted`).
    pub fn when(&self, method: &str, prefix: &str, then: impl FnOnce(&mut State) + Send + 'static) {
        self.when_nth((method, prefix, 1), then);
    }

    /// Scripts `then` for the `nth` such request (`Scripted`).
    pub fn when_nth(
        &self,
        (method, prefix, nth): (&str, &str, usize),
        then: impl FnOnce(&mut State) + Send + 'static,
    ) {
        self.lock()
            .scripted
            .push(Scripted::on((method, prefix, nth), then));
    }

    /// Scripts `then` for the first request that finds `seen` true of the state (a state the
    /// client makes and then leaves: looked at between every two of its requests).
    pub fn when_seen(
        &self,
        seen: impl Fn(&State) -> bool + Send + 'static,
        then: impl FnOnce(&mut State) + Send + 'static,
    ) {
        self.lock().scripted.push(Scripted {
            seen: Some(Box::new(seen)),
            ..Scripted::on(("", "", 1), then)
        });
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock_state(&self.state)
    }

    /// Writes an admin kubeconfig for this server into `dir` (the CA as a file beside it) and
    /// returns its path. `token` overrides the valid token.
    pub fn kubeconfig(&self, dir: &Path, token: Option<&str>) -> PathBuf {
        let ca = dir.join("fake-api-ca.pem");
        fs_err::write(&ca, &self.ca_pem).expect("write ca");
        let path = dir.join("admin.kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: admin\ncurrent-context: fake\n",
            self.url,
            ca.display(),
            token.unwrap_or(&self.token)
        );
        fs_err::write(&path, text).expect("write kubeconfig");
        path
    }

    /// A server with `healthy_calico`.
    pub fn calico() -> Self {
        let api = Self::start();
        api.healthy_calico();
        api
    }

    /// A server with `healthy_calico`, and its admin kubeconfig in a new temp dir.
    pub fn calico_admin() -> (Self, tempfile::TempDir, PathBuf) {
        let api = Self::calico();
        let dir = tempfile::tempdir().expect("tempdir");
        let admin = api.kubeconfig(dir.path(), None);
        (api, dir, admin)
    }

    /// A cluster with Calico installed by the operator the way Windows nodes want it: VXLAN
    /// pool, strictAffinity, FelixConfiguration with VNI 4096, kube-dns, node `win-1`, the
    /// `calico-node` service account.
    pub fn healthy_calico(&self) {
        let crd = "/apis/crd.projectcalico.org/v1";
        self.put(
            "/api/v1/namespaces/calico-system",
            meta("v1", "Namespace", "calico-system", None),
        );
        self.put(
            "/api/v1/namespaces/calico-system/serviceaccounts/calico-node",
            meta("v1", "ServiceAccount", "calico-node", Some("calico-system")),
        );
        self.put(&format!("{crd}/clusterinformations/default"), calico("ClusterInformation", "default", json!({"calicoVersion": "v3.30.2", "datastoreType": "kubernetes", "clusterType": "k8s,operator"})));
        self.put(
            "/apis/operator.tigera.io/v1/installations/default",
            json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
                "metadata": {"name": "default"},
                // Its Windows CNI directories are containerd's on the simulated hosts (their
                // config.toml), as the Installation's API asks of them.
                // What the operator's validation of a Windows install asks (tigera/operator
                // release-v1.44 validation.go): serviceCIDRs and a VXLAN IPv4 pool; no
                // windowsNodes while Windows is off (it refuses them then).
                "spec": {"calicoNetwork": {"bgp": "Disabled", "windowsDataplane": "Disabled",
                        "ipPools": [{"cidr": "10.244.0.0/16", "encapsulation": "VXLAN"}]},
                    "serviceCIDRs": ["10.96.0.0/12"]}}),
        );
        let mut endpoint = meta(
            "v1",
            "ConfigMap",
            "kubernetes-services-endpoint",
            Some("tigera-operator"),
        );
        endpoint["data"] =
            json!({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"});
        self.put(
            "/api/v1/namespaces/tigera-operator/configmaps/kubernetes-services-endpoint",
            endpoint,
        );
        // The operator's Deployment as Calico's manifest makes it (projectcalico/calico v3.32.1
        // `manifests/tigera-operator.yaml`: name and label `tigera-operator`, namespace
        // `tigera-operator`; the Helm chart puts it in the release's namespace).
        let mut deployment = meta(
            "apps/v1",
            "Deployment",
            "tigera-operator",
            Some("tigera-operator"),
        );
        deployment["metadata"]["labels"] = json!({"k8s-app": "tigera-operator"});
        deployment["spec"] = json!({"selector": {"matchLabels": {"name": "tigera-operator"}},
            "template": {"metadata": {"labels": {"name": "tigera-operator", "k8s-app": "tigera-operator"}},
                "spec": {"containers": [{"name": "tigera-operator", "image": "quay.io/tigera/operator",
                    "env": [{"name": "OPERATOR_NAME", "value": "tigera-operator"}]}]}}});
        self.put(
            "/apis/apps/v1/namespaces/tigera-operator/deployments/tigera-operator",
            deployment,
        );
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
        // kubelet started with --max-pods=60, what a /26 block holds on Windows (kubelet's
        // default 110 fails preflight's block-capacity: tests/cluster/cluster_preflight.rs).
        // Its address as kubelet posts it: the simulated host's (10.0.0.5 on "Ethernet").
        node["status"] = json!({"capacity": {"pods": "60"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "Hostname", "address": "win-1"}]});
        self.put("/api/v1/nodes/win-1", node);
        self.calico_node_rbac();
    }

    /// calico-node's ClusterRole and its binding, as Calico installs them: the rules of
    /// ClusterRole `calico-node` in Calico v3.31.7's `manifests/calico.yaml` that any test uses
    /// calico-node's own token for: tokens for the CNI plugin's service account; get pods,
    /// nodes and namespaces; patch and update `nodes/status`; list and watch pods, namespaces
    /// and service accounts.
    pub fn calico_node_rbac(&self) {
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        let mut role = meta(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "calico-node",
            None,
        );
        role["rules"] = json!([
            {"apiGroups": [""], "resources": ["serviceaccounts/token"],
                "resourceNames": ["calico-cni-plugin"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["pods", "nodes", "namespaces"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch", "update"]},
            {"apiGroups": [""], "resources": ["pods", "namespaces", "serviceaccounts"],
                "verbs": ["list", "watch"]},
        ]);
        self.put(&format!("{rbac}/clusterroles/calico-node"), role);
        let mut binding = meta(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            "calico-node",
            None,
        );
        binding["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "calico-node"});
        binding["subjects"] = json!([{"kind": "ServiceAccount", "name": "calico-node", "namespace": "calico-system"}]);
        self.put(&format!("{rbac}/clusterrolebindings/calico-node"), binding);
    }

    /// Sets the node's Ready condition (`status` True or False) with a message.
    pub fn set_node_ready(&self, node: &str, status: &str, message: &str) {
        let path = format!("/api/v1/nodes/{node}");
        let mut n = self.get(&path).expect("node");
        n["status"]["conditions"] =
            json!([{"type": "Ready", "status": status, "message": message}]);
        self.put(&path, n);
    }

    /// Sets the node's InternalIP as kubelet posts it, or leaves it none (a node whose
    /// address the test cannot know: a real Windows runner's).
    pub fn set_node_internal_ip(&self, node: &str, ip: Option<&str>) {
        let path = format!("/api/v1/nodes/{node}");
        let mut n = self.get(&path).expect("node");
        n["status"]["addresses"] = match ip {
            Some(ip) => {
                json!([{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": node}])
            }
            None => json!([{"type": "Hostname", "address": node}]),
        };
        self.put(&path, n);
    }

    /// Sets the default FelixConfiguration's vxlanVNI.
    pub fn set_felix_vni(&self, vni: u32) {
        let path = "/apis/crd.projectcalico.org/v1/felixconfigurations/default";
        let mut f = self.get(path).expect("felix");
        f["spec"]["vxlanVNI"] = json!(vni);
        self.put(path, f);
    }

    /// Leaves `vxlanVNI` out of the default FelixConfiguration, as most clusters do: Felix
    /// then uses its default, 4096.
    pub fn unset_felix_vni(&self) {
        let path = "/apis/crd.projectcalico.org/v1/felixconfigurations/default";
        let mut f = self.get(path).expect("felixconfiguration");
        if let Some(spec) = f["spec"].as_object_mut() {
            spec.remove("vxlanVNI");
        }
        self.put(path, f);
    }

    /// Stores a pod scheduled on `node`, owned by a controller of `owner` kind (`None`: a bare
    /// pod).
    pub fn put_pod(&self, namespace: &str, name: &str, node: &str, owner: Option<&str>) {
        let mut p = meta("v1", "Pod", name, Some(namespace));
        p["spec"] = json!({"nodeName": node, "containers": [{"name": "c", "image": "i"}]});
        p["status"] = json!({"phase": "Running"});
        if let Some(kind) = owner {
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": kind,
                "name": "owner", "uid": "owner-uid", "controller": true}]);
        }
        self.put(&format!("/api/v1/namespaces/{namespace}/pods/{name}"), p);
    }

    /// Puts a pod on its node's network (`spec.hostNetwork`: kube-proxy's and Calico's own
    /// HostProcess pods).
    pub fn set_host_network(&self, namespace: &str, name: &str) {
        let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
        let mut pod = self.get(&path).expect("pod");
        pod["spec"]["hostNetwork"] = json!(true);
        self.put(&path, pod);
    }

    /// Gives a pod its address, as kubelet reports it (`status.podIP`, `status.podIPs`); a
    /// host-network pod's is its node's (`status.hostIP`: kubernetes/kubernetes
    /// `pkg/kubelet/kubelet_pods.go`, `generateAPIPodStatus`, gives such a pod its host's IPs).
    pub fn set_pod_ip(&self, namespace: &str, name: &str, ip: &str) {
        let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
        let mut pod = self.get(&path).expect("pod");
        pod["status"]["podIP"] = json!(ip);
        pod["status"]["podIPs"] = json!([{ "ip": ip }]);
        if pod["spec"]["hostNetwork"] == json!(true) {
            pod["status"]["hostIP"] = json!(ip);
            pod["status"]["hostIPs"] = json!([{ "ip": ip }]);
        }
        self.put(&path, pod);
    }

    /// How many pods the server holds.
    pub fn pod_count(&self) -> usize {
        self.lock()
            .objects
            .keys()
            .filter(|k| k.contains("/pods/"))
            .count()
    }

    /// Stores a secret with `data` (values given as plain text, stored base64 as the API does).
    pub fn put_secret(&self, namespace: &str, name: &str, data: &[(&str, &[u8])]) {
        let mut s = meta("v1", "Secret", name, Some(namespace));
        s["type"] = json!("Opaque");
        s["data"] = data
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(b64(v))))
            .collect::<serde_json::Map<_, _>>()
            .into();
        self.put(&format!("/api/v1/namespaces/{namespace}/secrets/{name}"), s);
    }
}

/// Standard base64, as the API encodes secret data.
pub fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The claims of a token this server issued (it is a JWT whose signature nobody checks).
pub fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
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

/// Where the API server keeps a ServiceAccount or an RBAC object; `None` for another kind.
pub fn rbac_path(o: &Value) -> Option<String> {
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let name = o["metadata"]["name"].as_str()?;
    let ns = o["metadata"]["namespace"].as_str();
    Some(match (o["kind"].as_str()?, ns) {
        ("ServiceAccount", Some(ns)) => format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}"),
        ("ClusterRole", None) => format!("{rbac}/clusterroles/{name}"),
        ("ClusterRoleBinding", None) => format!("{rbac}/clusterrolebindings/{name}"),
        ("Role", Some(ns)) => format!("{rbac}/namespaces/{ns}/roles/{name}"),
        ("RoleBinding", Some(ns)) => format!("{rbac}/namespaces/{ns}/rolebindings/{name}"),
        ("ValidatingAdmissionPolicy", None) => {
            format!("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}")
        }
        ("ValidatingAdmissionPolicyBinding", None) => format!(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{name}"
        ),
        _ => return None,
    })
}

/// Every `crd.projectcalico.org/v1` object as its `projectcalico.org/v3` twin (IPAMConfig
/// becoming IPAMConfiguration), the v1 one kept or not, ClusterInformation's `datastoreReady`
/// set when `ready` says.
fn copy_calico_to_v3(st: &mut State, keep_v1: bool, ready: Option<bool>) {
    let v1 = "/apis/crd.projectcalico.org/v1/";
    let objects: Vec<(String, Value)> = st
        .objects
        .iter()
        .filter(|(k, _)| k.starts_with(v1))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (path, mut object) in objects {
        if !keep_v1 {
            st.objects.remove(&path);
        }
        let rest = path[v1.len()..].replacen("ipamconfigs/", "ipamconfigurations/", 1);
        object["apiVersion"] = json!("projectcalico.org/v3");
        if object["kind"] == "IPAMConfig" {
            object["kind"] = json!("IPAMConfiguration");
        }
        if let Some(r) = ready.filter(|_| object["kind"] == "ClusterInformation") {
            object["spec"]["datastoreReady"] = json!(r);
        }
        st.objects
            .insert(format!("/apis/projectcalico.org/v3/{rest}"), object);
    }
}
