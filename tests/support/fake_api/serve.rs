//! How the fake API server answers one request.

use super::{State, b64};
use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Mutex;

pub(super) type Reply = Response<Full<Bytes>>;

/// A resource the server serves: group/version, plural, kind, namespaced.
struct Resource {
    gv: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    verbs: &'static [&'static str],
}

const RW: &[&str] = &["create", "delete", "get", "list", "patch", "update"];

const fn r(gv: &'static str, plural: &'static str, kind: &'static str, ns: bool) -> Resource {
    Resource {
        gv,
        plural,
        kind,
        namespaced: ns,
        verbs: RW,
    }
}

static RESOURCES: &[Resource] = &[
    r("v1", "namespaces", "Namespace", false),
    r("v1", "nodes", "Node", false),
    r("v1", "pods", "Pod", true),
    r("v1", "secrets", "Secret", true),
    r("v1", "services", "Service", true),
    r("v1", "configmaps", "ConfigMap", true),
    r("coordination.k8s.io/v1", "leases", "Lease", true),
    r("v1", "events", "Event", true),
    r("v1", "serviceaccounts", "ServiceAccount", true),
    r("apps/v1", "daemonsets", "DaemonSet", true),
    r("apps/v1", "deployments", "Deployment", true),
    // The fleet DaemonSet's turns (`reconfigure --turn`: get, create, update).
    r("coordination.k8s.io/v1", "leases", "Lease", true),
    r(
        "policy/v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
    ),
    r("networking.k8s.io/v1", "servicecidrs", "ServiceCIDR", false),
    r(
        "discovery.k8s.io/v1",
        "endpointslices",
        "EndpointSlice",
        true,
    ),
    r(
        "networking.k8s.io/v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
    ),
    r(
        "crd.projectcalico.org/v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
    ),
    r(
        "crd.projectcalico.org/v1",
        "globalnetworkpolicies",
        "GlobalNetworkPolicy",
        false,
    ),
    // Tiers and the staged kinds, scoped as Calico's CRDs scope them at v3.31.7
    // (libcalico-go/config/crd/crd.projectcalico.org_{tiers,stagednetworkpolicies,
    // stagedglobalnetworkpolicies,stagedkubernetesnetworkpolicies}.yaml: Cluster, Namespaced,
    // Cluster, Namespaced).
    r("crd.projectcalico.org/v1", "tiers", "Tier", false),
    r(
        "crd.projectcalico.org/v1",
        "stagednetworkpolicies",
        "StagedNetworkPolicy",
        true,
    ),
    r(
        "crd.projectcalico.org/v1",
        "stagedglobalnetworkpolicies",
        "StagedGlobalNetworkPolicy",
        false,
    ),
    r(
        "crd.projectcalico.org/v1",
        "stagedkubernetesnetworkpolicies",
        "StagedKubernetesNetworkPolicy",
        true,
    ),
    r("crd.projectcalico.org/v1", "ipamblocks", "IPAMBlock", false),
    r("crd.projectcalico.org/v1", "ippools", "IPPool", false),
    r(
        "crd.projectcalico.org/v1",
        "ipamconfigs",
        "IPAMConfig",
        false,
    ),
    r(
        "crd.projectcalico.org/v1",
        "felixconfigurations",
        "FelixConfiguration",
        false,
    ),
    r(
        "crd.projectcalico.org/v1",
        "clusterinformations",
        "ClusterInformation",
        false,
    ),
    r(
        "operator.tigera.io/v1",
        "installations",
        "Installation",
        false,
    ),
    // The operator's status of each controller (tigera/operator release-v1.44
    // `api/v1/tigerastatus_types.go`: cluster-scoped).
    r(
        "operator.tigera.io/v1",
        "tigerastatuses",
        "TigeraStatus",
        false,
    ),
    // Calico's own API served as CRDs (the release that introduced it: projectcalico/calico
    // api/config/crd/projectcalico.org_*.yaml, every one cluster-scoped), instead of the
    // crd.projectcalico.org ones when `State::calico_v3` is set.
    r("projectcalico.org/v3", "ippools", "IPPool", false),
    r(
        "projectcalico.org/v3",
        "ipamconfigurations",
        "IPAMConfiguration",
        false,
    ),
    r("projectcalico.org/v3", "ipamblocks", "IPAMBlock", false),
    r(
        "projectcalico.org/v3",
        "felixconfigurations",
        "FelixConfiguration",
        false,
    ),
    r(
        "projectcalico.org/v3",
        "clusterinformations",
        "ClusterInformation",
        false,
    ),
    // kube-controllers' migration CRD (v3.33: migration.projectcalico.org/v1,
    // cluster-scoped).
    r(
        "migration.projectcalico.org/v1",
        "datastoremigrations",
        "DatastoreMigration",
        false,
    ),
    r("rbac.authorization.k8s.io/v1", "roles", "Role", true),
    r(
        "rbac.authorization.k8s.io/v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
    r(
        "rbac.authorization.k8s.io/v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    r(
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    Resource {
        gv: "authorization.k8s.io/v1",
        plural: "selfsubjectaccessreviews",
        kind: "SelfSubjectAccessReview",
        namespaced: false,
        verbs: &["create"],
    },
    Resource {
        gv: "authentication.k8s.io/v1",
        plural: "tokenreviews",
        kind: "TokenReview",
        namespaced: false,
        verbs: &["create"],
    },
];

/// What a request path names.
struct Target {
    resource: &'static Resource,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
    /// The collection's path, like `/api/v1/namespaces/x/pods`.
    collection: String,
}

impl Target {
    /// The namespace a request is judged in: for one Namespace object, that namespace
    /// (kubernetes v1.33 staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, `NewRequestInfo`).
    fn rbac_namespace(&self) -> Option<&str> {
        match (self.resource.plural, self.resource.gv, &self.name) {
            ("namespaces", "v1", Some(name)) => Some(name),
            _ => self.namespace.as_deref(),
        }
    }

    fn object_path(&self) -> Option<String> {
        self.name
            .as_ref()
            .map(|n| format!("{}/{n}", self.collection))
    }
}

fn parse_target(path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (gv, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => ((*v).to_owned(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return None,
    };
    let prefix = parts[..parts.len() - rest.len()].join("/");
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..] => (Some((*ns).to_owned()), {
            let mut v = vec![*plural];
            v.extend_from_slice(tail);
            v
        }),
        other => (None, other.to_vec()),
    };
    let (plural, name, sub) = match rest.as_slice() {
        [p] => (*p, None, None),
        [p, n] => (*p, Some((*n).to_owned()), None),
        [p, n, s] => (*p, Some((*n).to_owned()), Some((*s).to_owned())),
        _ => return None,
    };
    let resource = RESOURCES
        .iter()
        .find(|r| r.gv == gv && r.plural == plural)?;
    let collection = match &namespace {
        Some(ns) => format!("/{prefix}/namespaces/{ns}/{plural}"),
        None => format!("/{prefix}/{plural}"),
    };
    Some(Target {
        resource,
        namespace,
        name,
        sub,
        collection,
    })
}

pub async fn handle(req: Request<Incoming>, state: &Mutex<State>) -> Reply {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let diags_token = req
        .headers()
        .get(calicoctl_win::fleet::diags::auth::HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    // An eviction takes `eviction_delay`, counted in flight meanwhile.
    let eviction = method == "POST" && path.ends_with("/eviction");
    if eviction {
        let delay = {
            let mut st = super::lock_state(state);
            st.in_flight += 1;
            st.max_in_flight = st.max_in_flight.max(st.in_flight);
            st.eviction_times
                .push((path.to_string(), std::time::Instant::now()));
            st.eviction_delay
        };
        tokio::time::sleep(delay).await;
        super::lock_state(state).in_flight -= 1;
    }
    let mut st = super::lock_state(state);
    st.requests.push((method.clone(), path.clone()));
    st.scripted_for(&method, &path);
    if method == "POST" {
        st.post_queries.push((path.clone(), query.clone()));
    }
    {
        let st = &mut *st;
        super::dataplane::advance(&mut st.dataplane, &mut st.objects);
    }
    // A token is valid when the server issued it (or it is the admin's) and, as
    // kube-apiserver's JWT authenticator checks, its `exp` has not passed.
    let claims = bearer.as_deref().and_then(jwt_claims).unwrap_or_default();
    if !bearer.as_deref().is_some_and(|t| authenticates(&st, t)) {
        return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    }
    if method == "GET" && path == "/.well-known/openid-configuration" {
        // kube-apiserver's service-account issuer discovery (the issuer it signs with).
        return respond(
            StatusCode::OK,
            &json!({"issuer": st.issuer, "jwks_uri": format!("{}/openid/v1/jwks", st.issuer),
                "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"]}),
        );
    }
    let who = super::rbac::identity(&claims);
    if method == "GET"
        && let Some((ns, pod, port, rest)) = super::dataplane::proxy_target(&path)
    {
        // The answer's delay goes with it (`Delay`), slept once the state is let go.
        let (mut reply, delay) = pod_proxy(
            &mut st,
            &who,
            (&ns, &pod, &port, &rest),
            (&query, diags_token),
        );
        reply.extensions_mut().insert(Delay(delay));
        return reply;
    }
    // One of Calico's two groups is served: crd.projectcalico.org, or projectcalico.org/v3
    // alone (`calico_v3`), as a cluster installed with v3 CRDs serves it.
    let hidden = match (st.calico_v3, st.calico_v1_kept) {
        (true, true) => "",
        (true, false) => "crd.projectcalico.org",
        (false, _) => "projectcalico.org",
    };
    if !hidden.is_empty()
        && (path.starts_with(&format!("/apis/{hidden}/")) || path == format!("/apis/{hidden}"))
    {
        return not_found_resource();
    }
    if method == "GET"
        && let Some(mut doc) = discovery(&path)
    {
        if let Some(groups) = doc["groups"].as_array_mut() {
            groups.retain(|g| g["name"] != hidden);
        }
        return respond(StatusCode::OK, &doc);
    }
    let Some(target) = parse_target(&path) else {
        return not_found_resource();
    };
    let resource = match &target.sub {
        Some(s) => format!("{}/{s}", target.resource.plural),
        None => target.resource.plural.to_owned(),
    };
    let verb = match (method.as_str(), &target.name) {
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("DELETE", _) => "delete",
        ("PUT", _) => "update",
        _ => "patch",
    };
    let group = target.resource.gv.rsplit_once('/').map_or("", |(g, _)| g);
    // A list of one name is judged as a request for that name (`fields::exact_name`).
    let listed = (verb == "list")
        .then(|| super::fields::exact_name(&field_selector(&query)))
        .flatten();
    let request = super::rbac::Request {
        verb,
        group,
        resource: &resource,
        namespace: target.rbac_namespace(),
        // A create names no object, except a subresource's (a TokenRequest names its
        // service account).
        name: target
            .name
            .as_deref()
            .filter(|_| verb != "create" || target.sub.is_some())
            .or(listed.as_deref()),
    };
    if !super::rbac::allows(&st.objects, &who, &request) {
        return forbidden(&who, &request, target.resource.plural);
    }
    // A write refused by a server in trouble (etcd unavailable: kube-apiserver's 500 with
    // reason InternalError), at the write a test chose, counted from 1.
    let mut answer_lost = false;
    if method != "GET"
        && !path.ends_with("/selfsubjectaccessreviews")
        && !path.ends_with("/tokenreviews")
    {
        st.writes_seen += 1;
        answer_lost = st.timeout_write == Some(st.writes_seen);
        if st.throttle_write == Some(st.writes_seen) {
            return too_many_requests("Too many requests, please try again later.", 1, None);
        }
        // A create that outlives the client: kube-apiserver's handler goes on writing after
        // the request's deadline (kubernetes at 11d24f07,
        // staging/src/k8s.io/apiserver/pkg/endpoints/handlers/finisher/finisher.go
        // `asyncFinisher`: "the callee goroutine may continue to run"; an admission webhook
        // may hold it past the deadline the client asked for and gave up at). Answered as lost
        // now, written after the client's next two reads of the object, which find nothing.
        if st.late_write == Some(st.writes_seen) && method == "POST" {
            st.late = Some((
                path.clone(),
                serde_json::from_slice(&body).unwrap_or(Value::Null),
                0,
            ));
            return status(
                StatusCode::GATEWAY_TIMEOUT,
                "Timeout",
                "Timeout: request did not complete within requested timeout - context deadline exceeded",
            );
        }
        if st.fail_write == Some(st.writes_seen) {
            return status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "Internal error occurred: etcdserver: request timed out",
            );
        }
        // The write a test kills the client at: held, not applied, until the test lets go
        // (`FakeApi::hold_write_at`), then answered as a server going away would.
        if st.hold_write == Some(st.writes_seen) {
            st.held = true;
            drop(st);
            // Blocking this worker only (the runtime has others): no await while a guard of
            // the state could be thought held across it.
            while super::lock_state(state).hold_write.is_some() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            st = super::lock_state(state);
            if !std::mem::take(&mut st.pass_held) {
                return status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    "the server is shutting down",
                );
            }
        }
    }
    if st
        .forbidden
        .iter()
        .any(|(v, r)| v == verb && *r == resource)
    {
        return forbidden(&who, &request, target.resource.plural);
    }
    if let Some(denial) = st
        .webhook_denials
        .iter()
        .find(|d| d.verb == verb && d.resource == resource)
    {
        return webhook_denied(denial, &request, target.resource.plural);
    }
    let decoded = if content_type.contains("protobuf") {
        super::proto::decode(&body)
    } else {
        None
    };
    if content_type.contains("protobuf") && decoded.is_none() {
        return status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            &format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/merge-patch+json ({content_type})"
            ),
        );
    }
    let body: Value = if let Some(d) = decoded {
        d
    } else if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
        }
    };
    let reply = match (
        method.as_str(),
        target.name.is_some(),
        target.sub.as_deref(),
    ) {
        ("POST", false, None) if target.resource.plural == "selfsubjectaccessreviews" => {
            access_review(&st, &who, body)
        }
        ("POST", false, None) if target.resource.plural == "tokenreviews" => {
            super::token_review::review(&st, &body)
        }
        ("GET", true, None) => get(&st, &target),
        ("GET", false, None) => list(&st, &target, &query),
        ("POST", false, None) => create(&mut st, &target, body),
        ("POST", true, Some("token")) if target.resource.plural == "serviceaccounts" => {
            match admit_token_request(&st, &claims, &body, target.name.as_deref()) {
                Some(denied) => denied,
                None => token_request(&mut st, &target, &body),
            }
        }
        ("POST", true, Some("eviction")) if target.resource.plural == "pods" => {
            evict(&mut st, &target, body)
        }
        ("PATCH", true, None) => patch(&mut st, &target, &body, &query),
        ("PATCH", true, Some("status")) if target.resource.plural == "nodes" => {
            patch_node_status(&mut st, &target, &content_type, &body)
        }
        ("PUT", true, None) => replace(&mut st, &target, body),
        ("DELETE", true, None) => delete(&mut st, &target, &body),
        _ => status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ),
    };
    // The late create (`FakeApi::late_write_at`) commits once the client read its object back.
    // Here after two reads: the run's read-back and its rollback's look find nothing.
    if method == "GET"
        && let Some((at, _, reads)) = &mut st.late
        && path.starts_with(at.as_str())
        && {
            *reads += 1;
            *reads == 2
        }
        && let Some((at, object, _)) = st.late.take()
        && let Some(t) = parse_target(&at)
    {
        create(&mut st, &t, object);
    }
    // The write a test loses the answer of (`FakeApi::timeout_write_at`): applied, then
    // answered as kube-apiserver answers a request that outlived its deadline while its
    // storage write went on and committed (kubernetes at 11d24f07,
    // staging/src/k8s.io/apiserver/pkg/endpoints/handlers/finisher/finisher.go
    // `asyncFinisher`, under `FinishRequest`: on the context's deadline it returns
    // `errors.NewTimeoutError("request did not complete within requested timeout - " +
    // ctx.Err(), 0)` while "the callee goroutine may continue to run", a 504 with reason
    // Timeout; apimachinery pkg/api/errors/errors.go `NewTimeoutError` prefixes "Timeout: ").
    if answer_lost {
        return status(
            StatusCode::GATEWAY_TIMEOUT,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        );
    }
    reply
}

/// The pod proxy (`pods/proxy`, verb get), answered by the scripted dataplane.
fn pod_proxy(
    st: &mut State,
    who: &super::rbac::Identity,
    (ns, pod, port, rest): (&str, &str, &str, &str),
    (query, diags_token): (&str, Option<String>),
) -> (Reply, std::time::Duration) {
    let request = super::rbac::Request {
        verb: "get",
        group: "",
        resource: "pods/proxy",
        namespace: Some(ns),
        name: Some(pod),
    };
    let refused = st
        .forbidden
        .iter()
        .any(|(v, r)| v == "get" && r == "pods/proxy");
    if refused || !super::rbac::allows(&st.objects, who, &request) {
        return (forbidden(who, &request, "pods/proxy"), Default::default());
    }
    if rest == "/diags" {
        // The pod proxy passes the request's own headers on (`diags::answer`).
        st.diags_tokens
            .push((format!("{ns}/{pod}"), diags_token.clone()));
        return super::diags::answer(&st.diags, &st.objects, (ns, pod, port), diags_token);
    }
    let q = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), percent_decode(v)))
        .collect();
    let (code, body) = super::dataplane::proxy(&st.dataplane, &st.objects, (ns, pod, rest), &q);
    let delay = super::dataplane::delay(&st.dataplane, &q, &body);
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
    r.headers_mut()
        .insert("content-type", "text/plain".parse().expect("header"));
    (r, delay)
}

fn access_review(st: &State, who: &super::rbac::Identity, mut review: Value) -> Reply {
    let attrs = &review["spec"]["resourceAttributes"];
    let text = |k: &str| attrs[k].as_str().unwrap_or_default().to_owned();
    let (verb, mut resource) = (text("verb"), text("resource"));
    if !text("subresource").is_empty() {
        resource = format!("{resource}/{}", text("subresource"));
    }
    let (group, namespace, name) = (text("group"), text("namespace"), text("name"));
    let request = super::rbac::Request {
        verb: &verb,
        group: &group,
        resource: &resource,
        namespace: Some(namespace.as_str()).filter(|n| !n.is_empty()),
        name: Some(name.as_str()).filter(|n| !n.is_empty()),
    };
    let allowed = super::rbac::allows(&st.objects, who, &request)
        && !st
            .forbidden
            .iter()
            .any(|(v, r)| *v == verb && *r == resource);
    review["status"] = json!({"allowed": allowed});
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    respond(StatusCode::CREATED, &review)
}

/// kube-apiserver's 403 for a request RBAC does not allow (its `forbidden` message,
/// `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`).
fn forbidden(who: &super::rbac::Identity, r: &super::rbac::Request, plural: &str) -> Reply {
    let user = match who {
        super::rbac::Identity::Admin => "admin".to_owned(),
        super::rbac::Identity::ServiceAccount { namespace, name } => {
            format!("system:serviceaccount:{namespace}:{name}")
        }
    };
    let object = r
        .name
        .map_or(plural.to_owned(), |n| format!("{plural} \"{n}\""));
    let scope = r
        .namespace
        .map_or(" at the cluster scope".to_owned(), |ns| {
            format!(" in the namespace \"{ns}\"")
        });
    let msg = format!(
        "{object} is forbidden: User \"{user}\" cannot {} resource \"{}\" in API group \"{}\"{scope}",
        r.verb, r.resource, r.group
    );
    status(StatusCode::FORBIDDEN, "Forbidden", &msg)
}

/// A validating admission webhook's denial, as kube-apiserver answers it (kubernetes
/// `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go`,
/// `ToStatusErr`): the webhook's own code (0 taken as 403) and reason Forbidden, the message
/// `RESOURCE "NAME" is forbidden: admission webhook "WEBHOOK" denied the request: ITS MESSAGE`
/// (the name "Unknown" for a request that names none), details naming the object.
fn webhook_denied(d: &super::WebhookDenial, r: &super::rbac::Request, plural: &str) -> Reply {
    let group_resource = match r.group {
        "" => plural.to_owned(),
        g => format!("{plural}.{g}"),
    };
    let name = r.name.unwrap_or("Unknown");
    let message = format!(
        "{group_resource} \"{name}\" is forbidden: admission webhook \"{}\" denied the request: {}",
        d.webhook, d.message
    );
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "code": 403,
        "details": {"group": r.group, "kind": plural, "name": name}});
    respond(StatusCode::FORBIDDEN, &body)
}

/// The claims of a JWT; `None` for another token (the admin's).
pub(super) fn jwt_claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn not_found(t: &Target) -> Reply {
    let name = t.name.as_deref().unwrap_or_default();
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{} \"{name}\" not found", t.resource.plural),
    )
}

fn not_found_resource() -> Reply {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// A list's `labelSelector`, with the equality-based requirements of Kubernetes' label
/// selectors ("Labels and Selectors": `key=value`, `key==value`, `key!=value`, `key` exists,
/// `!key` absent; comma means and). Set-based ones (`in`, `notin`) are not used by the tool.
fn labels_match(labels: &Value, query: &str) -> bool {
    let Some(selector) = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "labelSelector")
        .map(|(_, v)| percent_decode(v))
    else {
        return true;
    };
    selector.split(',').filter(|r| !r.is_empty()).all(|r| {
        let label = |k: &str| labels.get(k.trim()).and_then(Value::as_str);
        if let Some((k, v)) = r.split_once("!=") {
            label(k) != Some(v.trim())
        } else if let Some((k, v)) = r.split_once("==").or_else(|| r.split_once('=')) {
            label(k) == Some(v.trim())
        } else if let Some(k) = r.strip_prefix('!') {
            label(k).is_none()
        } else {
            label(r).is_some()
        }
    })
}

fn get(st: &State, t: &Target) -> Reply {
    match t.object_path().and_then(|p| st.objects.get(&p)) {
        Some(o) => respond(StatusCode::OK, o),
        None => not_found(t),
    }
}

/// A list's `fieldSelector`, decoded (the first, as Go's `url.Values.Get` reads it).
fn field_selector(query: &str) -> String {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "fieldSelector")
        .map(|(_, v)| percent_decode(v))
        .unwrap_or_default()
}

fn list(st: &State, t: &Target, query: &str) -> Reply {
    let (plural, namespaced) = (t.resource.plural, t.resource.namespaced);
    let terms = match super::fields::terms(&field_selector(query), plural, namespaced) {
        Ok(terms) => terms,
        Err(why) => return status(StatusCode::BAD_REQUEST, "BadRequest", &why),
    };
    let items: Vec<&Value> = st
        .objects
        .iter()
        .filter(|(p, _)| {
            parse_target(p).is_some_and(|o| {
                std::ptr::eq(o.resource, t.resource)
                    && o.name.is_some()
                    && (t.namespace.is_none() || o.namespace == t.namespace)
            })
        })
        .map(|(_, o)| o)
        .filter(|o| super::fields::matches(&terms, plural, o))
        .filter(|o| labels_match(&o["metadata"]["labels"], query))
        .collect();
    // Paging as kube-apiserver pages a list (kubernetes
    // staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go, `ListOptions.Limit`: "If
    // more items exist, the server will set the `continue` field on the list metadata";
    // `ListOptions.Continue`: the token of the previous page, for the same query; none on the
    // last page). Ours is the offset; a real server's is opaque (base64 of the next key,
    // staging/src/k8s.io/apiserver/pkg/storage/continue.go `EncodeContinue`).
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    let from = param("continue").unwrap_or(0).min(items.len());
    let to = param("limit").map_or(items.len(), |l| (from + l).min(items.len()));
    let mut metadata = json!({"resourceVersion": "1"});
    if to < items.len() || st.endless_lists {
        metadata["continue"] = json!(to.to_string());
    }
    respond(
        StatusCode::OK,
        &json!({"apiVersion": t.resource.gv, "kind": format!("{}List", t.resource.kind),
            "metadata": metadata, "items": &items[from..to]}),
    )
}

fn create(st: &mut State, t: &Target, mut body: Value) -> Reply {
    let Some(name) = body["metadata"]["name"].as_str().map(str::to_owned) else {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "metadata.name: Required value",
        );
    };
    let path = format!("{}/{name}", t.collection);
    if (t.resource.gv, t.resource.plural) == ("v1", "pods")
        && let Some(refused) =
            super::pod_security::refuse(&st.objects, t.namespace.as_deref().unwrap_or(""), &body)
    {
        return status(StatusCode::FORBIDDEN, "Forbidden", &refused);
    }
    if st.objects.contains_key(&path) {
        return already_exists(t, &name);
    }
    body["apiVersion"] = json!(t.resource.gv);
    body["kind"] = json!(t.resource.kind);
    let m = &mut body["metadata"];
    if let Some(ns) = &t.namespace {
        m["namespace"] = json!(ns);
    }
    m["uid"] = json!(format!("uid-{name}"));
    if st.uid_generation > 0 {
        m["uid"] = json!(format!("uid-{name}-{}", st.uid_generation));
    }
    if t.resource.plural == "pods" {
        // Each pod its own uid, as kube-apiserver gives every object made (a pod made
        // again under the same name is another object).
        m["uid"] = json!(format!("uid-{name}-{}", st.requests.len()));
    }
    m["resourceVersion"] = json!("1");
    m["creationTimestamp"] = json!(now_text(st.clock_offset_s));
    if t.resource.plural == "secrets" && body["type"] == "kubernetes.io/service-account-token" {
        token_controller(st, t, &mut body);
    }
    let ns = t.namespace.clone().unwrap_or_default();
    match (t.resource.gv, t.resource.plural) {
        ("v1", "pods") => {
            // kube-scheduler places the pod, or says why it cannot (scheduler.rs); the kubelet
            // then runs it (dataplane.rs).
            let event = match super::scheduler::unschedulable(
                &st.objects,
                &st.dataplane.full,
                &ns,
                &mut body,
            ) {
                Some(e) => Some(e),
                None => super::dataplane::run_pod(&mut st.dataplane, &ns, &mut body),
            };
            if let Some(mut event) = event {
                // The kubelet's events name the pod by reference, its uid too
                // (client-go tools/reference `GetReference`).
                event["involvedObject"]["uid"] = body["metadata"]["uid"].clone();
                let name = event["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                st.objects
                    .insert(format!("/api/v1/namespaces/{ns}/events/{name}"), event);
            }
            node_dies_when_running(st, &body);
        }
        ("v1", "services") => super::dataplane::allocate(&mut st.dataplane, &mut body),
        ("networking.k8s.io/v1", "networkpolicies") => {
            super::dataplane::policy_made(&mut st.dataplane, format!("{ns}/{name}"), &body)
        }
        _ => {}
    }
    st.objects.insert(path, body.clone());
    respond(StatusCode::CREATED, &body)
}

/// The node of a pod named by `node_dies_when_running` stops posting its status once that pod
/// runs (dataplane.rs): Ready `Unknown` with the node lifecycle controller's message
/// (pkg/controller/nodelifecycle/node_lifecycle_controller.go `tryUpdateNodeHealth`).
fn node_dies_when_running(st: &mut State, pod: &Value) {
    if pod["status"]["phase"] != "Running"
        || st.dataplane.node_dies_when_running.as_deref() != pod["metadata"]["name"].as_str()
    {
        return;
    }
    st.dataplane.node_dies_when_running = None;
    let Some(node) = pod["spec"]["nodeName"].as_str() else {
        return;
    };
    if let Some(n) = st.objects.get_mut(&format!("/api/v1/nodes/{node}")) {
        n["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown",
            "message": "Kubelet stopped posting node status."}]);
    }
}

/// What Kubernetes' token controller does to a new service-account token secret, at once:
/// fills `token`, `ca.crt` and `namespace` when the service account exists.
fn token_controller(st: &mut State, t: &Target, secret: &mut Value) {
    let Some(ns) = &t.namespace else { return };
    let Some(sa) = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
        .as_str()
        .map(str::to_owned)
    else {
        return;
    };
    let sa_path = format!("/api/v1/namespaces/{ns}/serviceaccounts/{sa}");
    if !st.token_controller || !st.objects.contains_key(&sa_path) {
        return;
    }
    let token = issue(st, ns, &sa, None, None);
    secret["data"] = json!({"token": b64(token.as_bytes()), "ca.crt": b64(st.ca_pem.as_bytes()),
        "namespace": b64(ns.as_bytes())});
}

fn token_request(st: &mut State, t: &Target, body: &Value) -> Reply {
    if !t.object_path().is_some_and(|p| st.objects.contains_key(&p)) {
        return not_found(t);
    }
    let asked = body["spec"]["expirationSeconds"].as_i64().unwrap_or(3600);
    if asked < 600 {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "spec.expirationSeconds: Invalid value: may not specify a duration less than 10 minutes",
        );
    }
    let seconds = st.max_token_seconds.map_or(asked, |m| asked.min(m));
    let (ns, sa) = (
        t.namespace.clone().unwrap_or_default(),
        t.name.clone().unwrap_or_default(),
    );
    // A token bound to a Node (kube-apiserver from 1.31, where ServiceAccountTokenNodeBinding
    // is beta and on by default; GA in 1.33: kubernetes pkg/features/kube_features.go):
    // the Node must exist; an older server refuses the kind as its validation does.
    let bound = &body["spec"]["boundObjectRef"];
    let node = match bound["kind"].as_str() {
        Some("Node") if !st.node_binding => {
            return status(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                "spec.boundObjectRef.kind: Unsupported value: \"Node\": supported values: \"Pod\", \"Secret\"",
            );
        }
        Some("Node") => {
            let name = bound["name"].as_str().unwrap_or_default();
            match st.objects.get(&format!("/api/v1/nodes/{name}")) {
                Some(n) => Some((name.to_owned(), n["metadata"]["uid"].clone())),
                None => {
                    return status(
                        StatusCode::NOT_FOUND,
                        "NotFound",
                        &format!("nodes \"{name}\" not found"),
                    );
                }
            }
        }
        _ => None,
    };
    // The token's audiences are the request's, else the API server's own
    // (pkg/registry/core/serviceaccount/storage/token.go, `TokenREST.Create`).
    let audiences = match body["spec"]["audiences"].as_array() {
        Some(a) if !a.is_empty() => json!(a),
        _ => json!([API_AUDIENCE]),
    };
    let token = if st.opaque_tokens {
        st.issued += 1;
        let token = format!("opaque-token-{}", st.issued);
        st.tokens.insert(token.clone());
        token
    } else {
        let t = issue(st, &ns, &sa, Some(seconds), node);
        with_audiences(st, t, &audiences)
    };
    let expiration = now_text(seconds - st.clock_behind);
    respond(
        StatusCode::CREATED,
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {"name": sa, "namespace": ns, "creationTimestamp": null},
            "spec": {"audiences": audiences,
                "expirationSeconds": seconds, "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": expiration}}),
    )
}

/// The admission policies on TokenRequests (`fleet::rights::token_policy`,
/// `calico_node_token_policy`), each when it and its binding exist, judged as kube-apiserver's
/// validating admission policy plugin does (`support::admission`, their CEL run by a CEL
/// engine); the first denial, `reason: Forbidden`, is a 403 with its message. The caller's
/// `userInfo` is kube-apiserver's for a service-account token: its `sub`, and its node claim
/// (`kubernetes.io` / `node`: a pod's Node or the Node it is bound to) as
/// `authentication.kubernetes.io/node-name` in `extra` (k8s.io/apiserver
/// `pkg/authentication/serviceaccount/util.go`).
fn admit_token_request(
    st: &State,
    claims: &Value,
    body: &Value,
    account: Option<&str>,
) -> Option<Reply> {
    let base = "/apis/admissionregistration.k8s.io/v1";
    let mut extra = json!({});
    if let Some(node) = claims.pointer("/kubernetes.io/node/name") {
        extra["authentication.kubernetes.io/node-name"] = json!([node]);
    }
    let request = json!({"operation": "CREATE", "name": account, "subResource": "token",
        "resource": {"group": "", "version": "v1", "resource": "serviceaccounts"},
        "userInfo": {"username": claims["sub"].as_str().unwrap_or_default(), "extra": extra}});
    for name in [
        "calicoctl-win-token-per-node",
        "calicoctl-win-token-calico-node",
    ] {
        let policy = st
            .objects
            .get(&format!("{base}/validatingadmissionpolicies/{name}"));
        let bound = st
            .objects
            .contains_key(&format!("{base}/validatingadmissionpolicybindings/{name}"));
        let Some(policy) = policy.filter(|_| bound) else {
            continue;
        };
        if let crate::support::admission::Judged::Denied(message) =
            crate::support::admission::judge(policy, &request, body)
        {
            return Some(status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                &format!(
                    "serviceaccounts \"calico-node\" is forbidden: ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: {message}"
                ),
            ));
        }
    }
    None
}

/// The audience the server takes bearer tokens for (kube-apiserver's `--api-audiences`, by
/// default its service-account issuer's; the fake's tokens name this one).
pub(super) const API_AUDIENCE: &str = "https://kubernetes.default.svc";

/// Whether the server takes `token` as a bearer: `valid_for` its own audience.
pub(super) fn authenticates(st: &State, token: &str) -> bool {
    valid_for(st, token, &[API_AUDIENCE])
}

/// Whether `token` authenticates for one of `audiences`: one the server issued (or the admin's)
/// whose `exp` has not passed, one of whose audiences (`token_audiences`) is among them
/// (kubernetes/kubernetes `pkg/serviceaccount/jwt.go`, `jwtTokenAuthenticator.AuthenticateToken`:
/// "token audiences %q is invalid for the target audiences %q"), and whose claims still hold
/// (`still_valid`).
pub(super) fn valid_for(st: &State, token: &str, audiences: &[&str]) -> bool {
    let claims = jwt_claims(token).unwrap_or_default();
    let expired = claims["exp"]
        .as_i64()
        .is_some_and(|exp| exp <= now_secs() - st.clock_behind);
    let audience = token_audiences(&claims)
        .iter()
        .any(|a| audiences.contains(&a.as_str()));
    !expired && audience && st.tokens.contains(token) && still_valid(st, &claims)
}

/// The audiences a token is good for: its `aud`; a token with none (a legacy secret's JWT, or
/// the admin's and an opaque token, which kube-apiserver's audience-agnostic authenticators
/// take) is good for the API server's own alone. kubernetes/kubernetes `pkg/serviceaccount/
/// jwt.go`, `AuthenticateToken`: "only apiserver audiences are allowed for legacy tokens"
/// (`tokenAudiences = j.implicitAuds`); k8s.io/apiserver `pkg/authentication/authenticator/
/// audagnostic.go`, `authenticate`: `implicitAuds.Intersect(targetAuds)`, not authenticated
/// when empty (audiences.go, `Audiences.Intersect`).
pub(super) fn token_audiences(claims: &Value) -> Vec<String> {
    match claims["aud"].as_array() {
        Some(aud) if !aud.is_empty() => aud
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => vec![API_AUDIENCE.to_owned()],
    }
}

/// The third part of every token the fake signs: a JWS compact serialisation's signature is
/// the base64url of its bytes, without padding (RFC 7515, section 7.1), as the node's shape
/// check (`diags_review::jwt_shaped`) expects of kube-apiserver's tokens; this is the base64url
/// of `fake-signature`.
const FAKE_SIGNATURE: &str = "ZmFrZS1zaWduYXR1cmU";

/// `token` (just issued) made again with `audiences` as its `aud`.
fn with_audiences(st: &mut State, token: String, audiences: &Value) -> String {
    let Some(mut claims) = jwt_claims(&token) else {
        return token;
    };
    claims["aud"] = audiences.clone();
    st.tokens.remove(&token);
    let enc = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let again = format!(
        "{}.{}.{FAKE_SIGNATURE}",
        enc(&json!({"alg": "RS256", "kid": "fake"})),
        enc(&claims)
    );
    st.tokens.insert(again.clone());
    again
}

/// Whether a service-account token's claims still hold, as kube-apiserver validates them: its
/// issuer is the one the server signs with, and the account it names still exists with the
/// uid it names (kubernetes/kubernetes pkg/serviceaccount/claims.go, `Validate`). A token
/// without the private claim (the admin's) is checked by the token list alone.
fn still_valid(st: &State, claims: &Value) -> bool {
    if claims
        .get("iss")
        .is_some_and(|iss| iss.as_str() != Some(st.issuer.as_str()))
    {
        return false;
    }
    let Some(sa) = claims.get("kubernetes.io") else {
        return true;
    };
    let path = format!(
        "/api/v1/namespaces/{}/serviceaccounts/{}",
        sa["namespace"].as_str().unwrap_or_default(),
        sa["serviceaccount"]["name"].as_str().unwrap_or_default()
    );
    let account = st
        .objects
        .get(&path)
        .is_some_and(|o| o["metadata"]["uid"] == sa["serviceaccount"]["uid"]);
    // A token bound to a Node lives as long as that Node does.
    let node = sa.get("node").is_none_or(|n| {
        st.objects
            .get(&format!(
                "/api/v1/nodes/{}",
                n["name"].as_str().unwrap_or_default()
            ))
            .is_some_and(|o| o["metadata"]["uid"] == n["uid"])
    });
    account && node
}

/// A JWT for the service account, accepted by this server from now on; `None` never expires
/// (a legacy token secret's).
pub(super) fn issue(
    st: &mut State,
    ns: &str,
    sa: &str,
    seconds: Option<i64>,
    node: Option<(String, Value)>,
) -> String {
    st.issued += 1;
    let now = now_secs() - st.clock_behind;
    // The private claim kube-apiserver puts in a service-account token
    // (kubernetes/kubernetes pkg/serviceaccount/claims.go): the account's namespace, name and uid.
    let uid = st
        .objects
        .get(&format!("/api/v1/namespaces/{ns}/serviceaccounts/{sa}"))
        .map(|o| o["metadata"]["uid"].clone());
    let mut claims = json!({"iss": st.issuer, "sub": format!("system:serviceaccount:{ns}:{sa}"),
        "iat": now, "jti": format!("fake-{}", st.issued)});
    if let Some(uid) = uid {
        claims["kubernetes.io"] =
            json!({"namespace": ns, "serviceaccount": {"name": sa, "uid": uid}});
        if let Some((name, node_uid)) = node {
            claims["kubernetes.io"]["node"] = json!({"name": name, "uid": node_uid});
        }
    }
    if let Some(s) = seconds {
        claims["exp"] = json!(now + s);
        claims["aud"] = json!([API_AUDIENCE]);
    }
    let enc = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let token = format!(
        "{}.{}.{FAKE_SIGNATURE}",
        enc(&json!({"alg": "RS256", "kid": "fake"})),
        enc(&claims)
    );
    st.tokens.insert(token.clone());
    token
}

fn evict(st: &mut State, t: &Target, body: Value) -> Reply {
    st.evictions.push(body);
    // In kube-apiserver's order: API Priority and Fairness (a filter before the handler),
    // admission, then the eviction REST, which looks for the pod.
    if st.throttle > 0 {
        // An overloaded server (API Priority and Fairness): 429 with Retry-After and the
        // same in the Status details, and no DisruptionBudget cause.
        st.throttle -= 1;
        return too_many_requests("Too many requests, please try again later.", 1, None);
    }
    if let Some(refused) = namespace_terminating(st, t) {
        let at = now_text(st.clock_offset_s);
        let marks = st.marks_after_refusal;
        if let Some(pod) = t.object_path().and_then(|p| st.objects.get_mut(&p))
            && marks
            && pod["metadata"]["deletionTimestamp"].is_null()
        {
            pod["metadata"]["deletionTimestamp"] = json!(at);
        }
        return refused;
    }
    let Some(path) = t.object_path().filter(|p| st.objects.contains_key(p)) else {
        return not_found(t);
    };
    let key = format!(
        "{}/{}",
        t.namespace.as_deref().unwrap_or_default(),
        t.name.as_deref().unwrap_or_default()
    );
    if st.eviction_blocked.contains(&key) {
        // As kube-apiserver's eviction REST (pkg/registry/core/pod/storage/eviction.go): a
        // cause of type DisruptionBudget (serialised as "reason"); `checkAndDecrement` with no
        // disruption allowed sets no Retry-After, `createTooManyRequestsError` (a budget not
        // yet processed) sets one, which the response writer also sends as a header.
        let why = if st.pdb_retry_after == 0 {
            "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"
        } else {
            "The disruption budget web-pdb is still being processed by the server."
        };
        return too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            st.pdb_retry_after,
            Some(why),
        );
    }
    st.objects.remove(&path);
    respond(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

fn patch(st: &mut State, t: &Target, body: &Value, query: &str) -> Reply {
    let Some(path) = t.object_path() else {
        return not_found(t);
    };
    let unknown = st
        .unknown_fields
        .get(t.resource.plural)
        .cloned()
        .unwrap_or_default();
    let status_written = st.status_written_before_patch.remove(&path);
    let Some(object) = st.objects.get_mut(&path) else {
        return not_found(t);
    };
    if status_written {
        bump(object);
    }
    let set = |field: &String| !field.split('.').fold(body, |v, k| &v[k]).is_null();
    if let Some(field) = unknown.iter().find(|f| set(f))
        && st.strict_validation
        && query.split('&').any(|q| q == "fieldValidation=Strict")
    {
        return respond(
            StatusCode::BAD_REQUEST,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("strict decoding error: unknown field \"{field}\""),
                "reason": "BadRequest", "code": 400}),
        );
    }
    // A patch that names a resourceVersion is a precondition: kube-apiserver's `Store.Update`
    // refuses a patched object whose resourceVersion is not the stored one with a 409
    // (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go, `Update`).
    let rv = &body["metadata"]["resourceVersion"];
    if !rv.is_null() && *rv != object["metadata"]["resourceVersion"] {
        return status(
            StatusCode::CONFLICT,
            "Conflict",
            "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again",
        );
    }
    merge_patch(object, body);
    for field in &unknown {
        let (parent, leaf) = field.rsplit_once('.').unwrap_or(("", field));
        let at = parent
            .split('.')
            .filter(|k| !k.is_empty())
            .fold(&mut *object, |v, k| &mut v[k]);
        if let Some(m) = at.as_object_mut() {
            m.remove(leaf);
        }
    }
    bump(object);
    let object = object.clone();
    respond(StatusCode::OK, &object)
}

/// A patch of a node's status. A strategic merge patch merges `status.conditions` by `type`
/// (k8s.io/api core/v1 `NodeStatus.Conditions`: `patchStrategy:"merge" patchMergeKey:"type"`),
/// so a condition set by one writer leaves kubelet's; a JSON merge patch replaces the list
/// (RFC 7386), as kube-apiserver does.
fn patch_node_status(st: &mut State, t: &Target, content_type: &str, body: &Value) -> Reply {
    let Some(object) = t.object_path().and_then(|p| st.objects.get_mut(&p)) else {
        return not_found(t);
    };
    let mut body = body.clone();
    if content_type.contains("strategic-merge-patch")
        && let Some(new) = body["status"]["conditions"].as_array().cloned()
    {
        let mut merged: Vec<Value> = object["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for c in new {
            match merged.iter_mut().find(|m| m["type"] == c["type"]) {
                Some(m) => merge_patch(m, &c),
                None => merged.push(c),
            }
        }
        body["status"]["conditions"] = Value::Array(merged);
    }
    // The status and the metadata: the subresource resets only the spec (kubernetes
    // pkg/registry/core/node/strategy.go, `nodeStatusStrategy.PrepareForUpdate`:
    // `newNode.Spec = oldNode.Spec`), so calico-node keeps its annotations through it
    // (projectcalico/calico v3.31.7 libcalico-go lib/backend/k8s/resources/node.go,
    // `UpdateStatus`).
    merge_patch(&mut object["status"], &body["status"]);
    if body["metadata"].is_object() {
        merge_patch(&mut object["metadata"], &body["metadata"]);
    }
    bump(object);
    let object = object.clone();
    respond(StatusCode::OK, &object)
}

fn replace(st: &mut State, t: &Target, mut body: Value) -> Reply {
    made_again(st, &t.object_path().unwrap_or_default());
    touched(st, &t.object_path().unwrap_or_default());
    let Some(path) = t.object_path().filter(|p| st.objects.contains_key(p)) else {
        return not_found(t);
    };
    let current = &st.objects[&path];
    let rv = &body["metadata"]["resourceVersion"];
    if !rv.is_null() && *rv != current["metadata"]["resourceVersion"] {
        return status(
            StatusCode::CONFLICT,
            "Conflict",
            "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again",
        );
    }
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    // An update keeps the object's uid when the body has none, and its creationTimestamp
    // always (kubernetes `staging/src/k8s.io/apiserver/pkg/registry/rest/update.go`,
    // `BeforeUpdate`: "Use the existing UID if none is provided", "ignore changes to
    // timestamp").
    if body["metadata"]["uid"].is_null() {
        body["metadata"]["uid"] = current["metadata"]["uid"].clone();
    }
    if !current["metadata"]["creationTimestamp"].is_null() {
        body["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"].clone();
    }
    bump(&mut body);
    st.objects.insert(path, body.clone());
    respond(StatusCode::OK, &body)
}

/// A delete's `preconditions` (uid, resourceVersion) the object does not meet: 409 Conflict, as
/// kube-apiserver answers (`staging/src/k8s.io/apiserver/pkg/storage/interfaces.go`,
/// `Preconditions.Check`, an invalid-object error that `storage/errors/storage.go`
/// `InterpretDeleteError` makes a `NewConflict`).
fn unmet_preconditions(st: &State, t: &Target, body: &Value) -> Option<Reply> {
    let current = st.objects.get(&t.object_path()?)?;
    for (field, name) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        let want = &body["preconditions"][field];
        if want.is_string() && *want != current["metadata"][field] {
            return Some(status(
                StatusCode::CONFLICT,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on {} \"{}\": Precondition failed: {name} in precondition: {}, {name} in object meta: {}",
                    t.resource.plural,
                    t.name.as_deref().unwrap_or_default(),
                    want.as_str().unwrap_or_default(),
                    current["metadata"][field].as_str().unwrap_or_default()
                ),
            ));
        }
    }
    None
}

fn delete(st: &mut State, t: &Target, options: &Value) -> Reply {
    let name = t.name.clone().unwrap_or_default();
    let path = t.object_path().unwrap_or_default();
    st.delete_options.push((path.clone(), options.clone()));
    made_again(st, &path);
    if let Some(left) = st.touched_before_delete.get_mut(&path).filter(|n| **n > 0) {
        *left -= 1;
        if let Some(o) = st.objects.get_mut(&path) {
            bump(o);
        }
    }
    // DeleteOptions' `preconditions` (uid, resourceVersion) against the object's, after a
    // scripted re-create (for namespaces too: pkg/registry/core/namespace/storage/storage.go
    // `Delete` checks the uid precondition the same way).
    if let Some(conflict) = unmet_preconditions(st, t, options) {
        return conflict;
    }
    match (t.resource.gv, t.resource.plural) {
        // A pod's delete is graceful: kube-apiserver marks it (`deletionTimestamp`, the grace
        // period) and keeps it until its kubelet confirms with grace 0 (kubernetes
        // `pkg/registry/rest/delete.go`, `BeforeDelete`; the kubelet's
        // `pkg/kubelet/status/status_manager.go`, `syncPod`, deletes with grace 0 once the
        // containers stopped). The kubelet of a node not Ready (or gone) never confirms, so its
        // pod stays Terminating; a delete with `gracePeriodSeconds: 0` removes it at once.
        // Nor does a kubelet whose containers do not stop (`pods_linger`).
        ("v1", "pods")
            if options["gracePeriodSeconds"] != json!(0)
                && (st.dataplane.pods_linger || on_dead_node(st, &path)) =>
        {
            let at = now_text(st.clock_offset_s);
            if !st.objects.contains_key(&path) {
                return not_found(t);
            }
            super::namespace_controller::mark(st, &path, &at);
            return respond(StatusCode::OK, &st.objects[&path]);
        }
        ("networking.k8s.io/v1", "networkpolicies") => {
            let key = format!("{}/{name}", t.namespace.clone().unwrap_or_default());
            super::dataplane::policy_deleted(&mut st.dataplane, &key);
        }
        // kube-apiserver marks a namespace deleted the first time through an update
        // (`REST.Delete`'s `GuaranteedUpdate` sets deletionTimestamp and phase Terminating:
        // kubernetes pkg/registry/core/namespace/storage/storage.go), which moves its
        // resourceVersion (a write carrying the one before is refused, 409), and answers
        // with the namespace so marked; the namespace controller then deletes what is in it
        // and, once nothing is left, the namespace (namespace_controller.rs). A namespace
        // being deleted is Terminating until then; a second delete (its preconditions met,
        // checked above as upstream checks them first) is answered 200 with the namespace as
        // it is, unchanged (`REST.Delete` at commit
        // 94341df30b4aef29676b997d0e2320534d05bfab: `if len(namespace.Spec.Finalizers) != 0
        // { return namespace, false, nil }`; older releases answered 409 here).
        ("v1", "namespaces")
            if st
                .objects
                .contains_key(&format!("/api/v1/namespaces/{name}")) =>
        {
            let path = format!("/api/v1/namespaces/{name}");
            if st.objects[&path]["metadata"]["deletionTimestamp"].is_string() {
                return respond(StatusCode::OK, &st.objects[&path]);
            }
            let at = now_text(st.clock_offset_s);
            let ns = st.objects.get_mut(&path).expect("checked above");
            ns["metadata"]["deletionTimestamp"] = json!(at);
            ns["status"]["phase"] = json!("Terminating");
            bump(ns);
            let marked = ns.clone();
            // The pods as a graceful delete of each leaves them (the pod arm above).
            let lingers = |st: &State, p: &str| st.dataplane.pods_linger || on_dead_node(st, p);
            super::namespace_controller::delete_content(st, &name, &lingers);
            return respond(StatusCode::OK, &marked);
        }
        _ => {}
    }
    match t.object_path().and_then(|p| st.objects.remove(&p)) {
        Some(o) => {
            // The last pod of a namespace being deleted gone: the namespace controller's
            // next pass finishes it.
            if (t.resource.gv, t.resource.plural) == ("v1", "pods")
                && let Some(ns) = t.namespace.clone()
            {
                super::namespace_controller::finish(st, &ns);
            }
            respond(StatusCode::OK, &o)
        }
        None => not_found(t),
    }
}

/// Whether the pod at `path` is scheduled on a node that is gone or whose Ready condition is
/// not True.
fn on_dead_node(st: &State, path: &str) -> bool {
    let Some(node) = st
        .objects
        .get(path)
        .and_then(|p| p["spec"]["nodeName"].as_str())
    else {
        return false;
    };
    match st.objects.get(&format!("/api/v1/nodes/{node}")) {
        None => true,
        Some(n) => n["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] != "True")
        }),
    }
}

/// Another client's write of `path` (its content the same), scripted to land just before
/// this client's update: the resourceVersion moves, so the update's precondition is not met
/// (kube-apiserver's `Update`, 409: `staging/src/k8s.io/apiserver/pkg/registry/generic/
/// registry/store.go`).
fn touched(st: &mut State, path: &str) {
    let Some(left) = st.touched_before_update.get_mut(path).filter(|n| **n > 0) else {
        return;
    };
    *left -= 1;
    if let Some(o) = st.objects.get_mut(path) {
        bump(o);
    }
}

/// Another client's delete and create of `path`, scripted to land just before this write.
fn made_again(st: &mut State, path: &str) {
    if st.made_again_before_write.remove(path)
        && let Some(o) = st.objects.get_mut(path)
    {
        let uid = o["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
        o["metadata"]["uid"] = json!(format!("{uid}-again"));
        o["metadata"]["creationTimestamp"] = json!(now_text(st.clock_offset_s));
        bump(o);
    }
}

pub(super) fn bump(object: &mut Value) {
    let rv: u64 = object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    object["metadata"]["resourceVersion"] = json!((rv + 1).to_string());
}

/// RFC 7386 JSON merge patch (strategic merge patches of plain fields behave the same).
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (k, v) in p {
        if v.is_null() {
            if let Some(m) = target.as_object_mut() {
                m.remove(k);
            }
        } else {
            merge_patch(&mut target[k], v);
        }
    }
}

/// The discovery documents `kubectl` reads before it sends a request.
fn discovery(path: &str) -> Option<Value> {
    let groups = || {
        let mut gvs: Vec<&str> = RESOURCES
            .iter()
            .map(|r| r.gv)
            .filter(|gv| gv.contains('/'))
            .collect();
        gvs.dedup();
        gvs
    };
    match path.trim_end_matches('/') {
        "/version" => Some(
            json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}),
        ),
        "/api" => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})),
        "/apis" => Some(
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups().iter().map(|gv| {
            let (g, v) = gv.split_once('/').unwrap_or_default();
            json!({"name": g, "versions": [{"groupVersion": gv, "version": v}], "preferredVersion": {"groupVersion": gv, "version": v}})
        }).collect::<Vec<_>>()}),
        ),
        p => {
            let gv = p
                .strip_prefix("/api/")
                .or_else(|| p.strip_prefix("/apis/"))?;
            let mut resources: Vec<Value> = RESOURCES
                .iter()
                .filter(|r| r.gv == gv)
                .map(|r| {
                    json!({"name": r.plural, "singularName": r.kind.to_lowercase(), "namespaced": r.namespaced,
                        "kind": r.kind, "verbs": r.verbs})
                })
                .collect();
            if resources.is_empty() {
                return None;
            }
            if gv == "v1" {
                resources.push(json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                    "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}));
                resources.push(
                    json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
                    "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}),
                );
            }
            Some(
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
            )
        }
    }
}

/// A 429 as kube-apiserver writes one: `retryAfterSeconds` (omitted when 0) and, when
/// positive, the same as a Retry-After header (apiserver `responsewriters.ErrorNegotiated`).
fn too_many_requests(message: &str, retry_after: u64, budget: Option<&str>) -> Reply {
    let mut details = json!({});
    if retry_after > 0 {
        details["retryAfterSeconds"] = json!(retry_after);
    }
    if let Some(why) = budget {
        details["causes"] = json!([{"reason": "DisruptionBudget", "message": why}]);
    }
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "TooManyRequests", "details": details, "code": 429});
    let mut r = respond(StatusCode::TOO_MANY_REQUESTS, &body);
    if retry_after > 0 {
        r.headers_mut().insert(
            "retry-after",
            retry_after.to_string().parse().expect("header"),
        );
    }
    r
}

/// kube-apiserver's NamespaceLifecycle admission (apiserver
/// `pkg/admission/plugin/namespace/lifecycle/admission.go`, `Admit`): a create in a namespace
/// whose phase is Terminating, an eviction included (a create of the pod's subresource,
/// admitted before the eviction REST looks for the pod), is refused 403 with a
/// `NamespaceTerminating` cause (`admission.NewForbidden`: `pods "NAME" is forbidden: ...`).
/// A namespace the server does not hold is let through here (the plugin's 404 for a missing
/// namespace is not modelled: the fake keeps few namespace objects).
fn namespace_terminating(st: &State, t: &Target) -> Option<Reply> {
    let ns = t.namespace.as_deref()?;
    let object = st.objects.get(&format!("/api/v1/namespaces/{ns}"))?;
    if object["status"]["phase"] != "Terminating" {
        return None;
    }
    let name = t.name.as_deref().unwrap_or_default();
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated", t.resource.plural),
        "reason": "Forbidden",
        "details": {"name": name, "kind": t.resource.plural, "causes": [{"reason": "NamespaceTerminating",
            "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]},
        "code": 403});
    Some(respond(StatusCode::FORBIDDEN, &body))
}

/// kube-apiserver's 409 for a create whose name is taken (kubernetes at 11d24f07,
/// staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go `NewAlreadyExists`: the
/// qualified resource and name in the message, the group, resource (as `kind`) and name in
/// `details`), which the generic registry's `Store.Create` returns when the key exists.
fn already_exists(t: &Target, name: &str) -> Reply {
    let group = t.resource.gv.rsplit_once('/').map_or("", |(g, _)| g);
    let qualified = match group {
        "" => t.resource.plural.to_owned(),
        g => format!("{}.{g}", t.resource.plural),
    };
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{qualified} \"{name}\" already exists"), "reason": "AlreadyExists",
        "details": {"name": name, "group": group, "kind": t.resource.plural}, "code": 409});
    respond(StatusCode::CONFLICT, &body)
}

pub(super) fn status(code: StatusCode, reason: &str, message: &str) -> Reply {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    respond(code, &body)
}

pub(super) fn respond(code: StatusCode, body: &Value) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", "application/json".parse().expect("header"));
    r
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The answer to a request held while the server stalled (`State::stalled`): a server going
/// away, nothing applied.
pub fn unavailable() -> Reply {
    status(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "the server is shutting down",
    )
}

/// How long an answer is held before it is sent (a pod's lookup that hangs).
#[derive(Clone, Copy)]
pub struct Delay(pub std::time::Duration);

/// The `Date` header of an answer, the server's clock `offset` seconds from this host's.
pub fn http_date(offset: i64) -> Option<hyper::header::HeaderValue> {
    let t = jiff::Timestamp::from_second(now_secs() + offset).ok()?;
    let text = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&t)
        .ok()?;
    text.parse().ok()
}

/// RFC 3339 time `offset` seconds from now.
pub(super) fn now_text(offset: i64) -> String {
    jiff::Timestamp::from_second(now_secs() + offset)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
