//! Credentials for calico-node: a service-account token (TokenRequest, or a legacy token
//! secret) and the etcd TLS files from their secret, in types whose `Debug` never shows them.

use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, Stop, Wait, poll_until};
use base64::Engine;
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::Api;
use kube::api::{ListParams, ObjectMeta, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// A bearer token; shown nowhere.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// A JWT of these claims, signed by no one.
    #[cfg(test)]
    pub(crate) fn jwt(claims: &str) -> Self {
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        Self::new(format!("{}.{}.sig", enc(r#"{"alg":"RS256"}"#), enc(claims)))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The `exp` claim (Unix seconds); `None` for a token that does not expire (a legacy
    /// secret's), is not a JWT, or whose claim is no time (`unusable` says).
    pub fn expiry(&self) -> Option<i64> {
        self.claim_time("exp")
    }

    /// A claim holding a time between 1970 and 9999, so no arithmetic on it can overflow.
    fn claim_time(&self, name: &str) -> Option<i64> {
        self.claims()?
            .get(name)?
            .as_i64()
            .filter(|t| (0..=LAST_TIME).contains(t))
    }

    /// Why the token cannot be used: a time claim (`exp`, `iat`) that is no time, or a JWT
    /// that expires before it was issued.
    pub fn unusable(&self) -> Option<String> {
        let claims = self.claims()?;
        for name in ["exp", "iat"] {
            let Some(v) = claims.get(name) else { continue };
            if v.as_i64().is_none_or(|t| !(0..=LAST_TIME).contains(&t)) {
                let mut shown = v.to_string();
                if shown.len() > 40 {
                    shown = format!("{}...", shown.chars().take(40).collect::<String>());
                }
                return Some(format!(
                    "its '{name}' claim ({shown}) is not a time between 1970 and 9999"
                ));
            }
        }
        match (self.issued_at(), self.expiry()) {
            (Some(iat), Some(exp)) if exp <= iat => Some(format!(
                "it expires ({}) no later than it was issued ({})",
                crate::duration::time_text(exp),
                crate::duration::time_text(iat)
            )),
            _ => None,
        }
    }

    /// Whether it is a JWT (a token whose claims can be read).
    pub fn is_jwt(&self) -> bool {
        self.claims().is_some()
    }

    /// The first 16 hex digits of its SHA-256: tells tokens apart in a record without
    /// keeping them.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.0.as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The JWT's claims; `None` when it is not a JWT.
    fn claims(&self) -> Option<serde_json::Value> {
        let payload = self.0.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The text claim at `pointer` (a JSON pointer: `~1` is a `/` within a name).
    fn text_claim(&self, pointer: &str) -> Option<String> {
        self.claims()?.pointer(pointer)?.as_str().map(str::to_owned)
    }

    /// The service account's uid it was issued for: the private claim `kubernetes.io` /
    /// `serviceaccount` / `uid` (kubernetes/kubernetes `pkg/serviceaccount/claims.go`), or a
    /// legacy token's `kubernetes.io/serviceaccount/service-account.uid`.
    pub fn service_account_uid(&self) -> Option<String> {
        self.text_claim("/kubernetes.io/serviceaccount/uid")
            .or_else(|| self.text_claim("/kubernetes.io~1serviceaccount~1service-account.uid"))
    }

    /// The Node it is bound to (claim `kubernetes.io` / `node` / `name`): deleting that Node
    /// revokes it.
    pub fn bound_node(&self) -> Option<String> {
        self.text_claim("/kubernetes.io/node/name")
    }

    /// The uid of the Node it is bound to.
    pub fn bound_node_uid(&self) -> Option<String> {
        self.text_claim("/kubernetes.io/node/uid")
    }

    /// Its issuer (`iss`).
    pub fn issuer(&self) -> Option<String> {
        self.text_claim("/iss")
    }

    /// The `iat` claim (Unix seconds).
    pub fn issued_at(&self) -> Option<i64> {
        self.claim_time("iat")
    }

    /// The service account of its subject `system:serviceaccount:NAMESPACE:NAME`.
    pub fn service_account(&self) -> Option<(String, String)> {
        let claims = self.claims()?;
        let rest = claims
            .get("sub")?
            .as_str()?
            .strip_prefix("system:serviceaccount:")?;
        let (ns, name) = rest.split_once(':')?;
        (!ns.is_empty() && !name.is_empty()).then(|| (ns.to_owned(), name.to_owned()))
    }

    /// `Some(expiry)` when the token is valid after `deadline` (Unix seconds), `Some(None)`
    /// when it never expires, `None` when it expires by then.
    pub fn outlives(&self, deadline: i64) -> Option<Option<i64>> {
        match self.expiry() {
            None => Some(None),
            Some(exp) if exp > deadline => Some(Some(exp)),
            Some(_) => None,
        }
    }
}

/// From when kube-apiserver binds service-account tokens to Nodes by default (kubernetes
/// `pkg/features/kube_features.go`).
pub const NODE_BINDING_SINCE: &str = "Kubernetes 1.31 (ServiceAccountTokenNodeBinding: beta and on by default from 1.31, GA in 1.33)";

/// What status says of a token that is not bound to a Node.
pub fn unbound_sentence() -> String {
    format!(
        "Token: not bound to the Node (the API server binds service-account tokens to Nodes from {NODE_BINDING_SINCE}; before, where the feature gate is off, or for a token issued before, deleting the Node does not revoke it); where the admission policy {} is applied, an unbound token cannot renew itself: run 'calicoctl-win fetch kubeconfig' once the Node exists for a Node-bound one",
        crate::cluster::rights::CALICO_NODE_TOKEN_POLICY
    )
}

/// The most a token file may hold: a service-account JWT is a few kilobytes.
pub const TOKEN_FILE_CAP: usize = 64 * 1024;

/// The last second of the year 9999 (Unix seconds): a token claim past it is no time.
const LAST_TIME: i64 = 253_402_300_799;

/// Why calico-node's token file gives no token. The token is never in the message.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error(
        "calico-node's token file {path} is {size} bytes, over the {} KiB cap on a token file (a service-account token is a few KiB)",
        TOKEN_FILE_CAP / 1024
    )]
    OverCap { path: String, size: usize },
    #[error("calico-node's token file {path} holds control characters: it is not a bearer token")]
    ControlCharacters { path: String },
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
}

impl TokenFileError {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        "issue a new token: 'calicoctl-win fetch kubeconfig --kubeconfig installer.kubeconfig' (an admin makes installer.kubeconfig with 'calicoctl-win fetch installer-kubeconfig')"
    }
}

impl crate::error::Diagnose for TokenFileError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        match self {
            Self::Host(_) => None,
            _ => crate::error::Diagnosis::new(
                crate::error::Exit::Failed,
                crate::error::Kind::Failed,
                self.hint(),
            ),
        }
    }
}

/// The token in a token file's bytes, trimmed (empty: none), refused over the cap or with
/// control characters.
fn token_in_file(path: &str, bytes: &[u8]) -> Result<Option<Token>, TokenFileError> {
    if bytes.len() > TOKEN_FILE_CAP {
        return Err(TokenFileError::OverCap {
            path: path.into(),
            size: bytes.len(),
        });
    }
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.chars().any(char::is_control) {
        return Err(TokenFileError::ControlCharacters { path: path.into() });
    }
    Ok((!text.is_empty()).then(|| Token::new(text)))
}

/// calico-node's token, as client-go picks it from its kubeconfig at `path` (`node_token_in`).
pub fn node_token(
    host: &dyn crate::host::Host,
    path: &str,
) -> Result<Option<Token>, TokenFileError> {
    let Some(bytes) = host.read_file(path)? else {
        return Ok(None);
    };
    node_token_in(host, &String::from_utf8_lossy(&bytes))
}

/// calico-node's token from its kubeconfig's text, in client-go's order (v1.20.2
/// `transport/round_trippers.go` `bearerAuthRoundTripper.RoundTrip`, `transport/token_source.go`
/// `fileTokenSource.Token`): the `tokenFile`'s, trimmed, when readable and not empty (over
/// `TOKEN_FILE_CAP` or with control characters is unreadable), else the inline `token`; the
/// file's error only when there is none.
pub fn node_token_in(
    host: &dyn crate::host::Host,
    kubeconfig: &str,
) -> Result<Option<Token>, TokenFileError> {
    let Some(source) = crate::render::kubeconfig::token_source(kubeconfig) else {
        return Ok(None);
    };
    let from_file = source
        .file
        .as_deref()
        .map(|file| match host.read_file(file) {
            Ok(Some(bytes)) => token_in_file(file, &bytes),
            Ok(None) => Ok(None),
            Err(e) => Err(e.into()),
        });
    match (from_file, source.inline) {
        (Some(Ok(Some(token))), _) => Ok(Some(token)),
        (_, Some(inline)) => Ok(Some(Token::new(inline))),
        (Some(Err(e)), None) => Err(e),
        (Some(Ok(None)) | None, None) => Ok(None),
    }
}

/// `Token::outlives` `within` from now.
pub fn outlives(token: &Token, within: std::time::Duration) -> Option<Option<i64>> {
    let deadline =
        crate::duration::now().saturating_add(i64::try_from(within.as_secs()).unwrap_or(i64::MAX));
    token.outlives(deadline)
}

/// Why credentials could not be made; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("the service account {namespace}/{name} does not exist on {server}")]
    NoServiceAccount {
        server: String,
        namespace: String,
        name: String,
    },
    #[error(
        "the token secret {namespace}/{name} was not filled by the token controller within {}s",
        .after.as_secs()
    )]
    TokenNotFilled {
        namespace: String,
        name: String,
        after: Duration,
    },
    #[error(
        "no CA certificate for {server}: the admin kubeconfig has none and the cluster has no kube-root-ca.crt ConfigMap"
    )]
    NoCa { server: String },
    #[error("the secret {namespace}/{name} does not exist on {server}")]
    NoSecret {
        server: String,
        namespace: String,
        name: String,
    },
    #[error("the secret {namespace}/{name} has no key {key}")]
    MissingKey {
        namespace: String,
        name: String,
        key: String,
    },
}

impl CredentialError {
    pub fn hint(&self) -> String {
        match self {
            CredentialError::NoServiceAccount { name, .. } if name.starts_with("calicoctl-win") => "an admin creates it once per cluster: 'calicoctl-win fleet rbac | kubectl apply -f -' (or name the right one with --namespace and --service-account)".into(),
            CredentialError::NoServiceAccount { .. } => "install Calico first (its calico-node service account must exist), or name the right one with --namespace and --service-account".into(),
            CredentialError::TokenNotFilled { .. } => "check that kube-controller-manager runs its token controller (legacy token secrets need it), or drop --legacy-secret to use the TokenRequest API".into(),
            CredentialError::NoCa { .. } => "use an admin kubeconfig with certificate-authority-data (insecure-skip-tls-verify is never copied to the node)".into(),
            CredentialError::NoSecret { .. } => "create the secret with the etcd client key, certificate and CA (keys etcd-key, etcd-cert, etcd-ca), or name it with --secret".into(),
            CredentialError::MissingKey { .. } => "the secret needs the keys etcd-key, etcd-cert and etcd-ca".into(),
        }
    }
}

/// A token and what it is for.
#[derive(Debug)]
pub struct Issued {
    pub token: Token,
    /// Unix seconds; `None` never expires.
    pub expires: Option<i64>,
    /// The CA a legacy token secret carries.
    pub ca_pem: Option<String>,
    /// Why a token asked to be bound to a Node is not.
    pub unbound: Option<String>,
}

/// The service account, or a clear error when it does not exist.
pub fn service_account(c: &Cluster, namespace: &str, name: &str) -> Result<(), anyhow::Error> {
    match c.get_in::<ServiceAccount>(namespace, name)? {
        Some(_) => Ok(()),
        None => Err(no_account(c, namespace, name).into()),
    }
}

fn no_account(c: &Cluster, namespace: &str, name: &str) -> CredentialError {
    CredentialError::NoServiceAccount {
        server: c.server.clone(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// A token from the TokenRequest API, bound to the Node `node` when given (deleting it revokes
/// the token); a server that refuses the binding gives an unbound one, `Issued::unbound` why.
pub fn token_request(
    c: &Cluster,
    namespace: &str,
    name: &str,
    lifetime: Duration,
    node: Option<&crate::k8s_name::NodeName>,
) -> Result<Issued, anyhow::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(c.client.clone(), namespace);
    let what = format!("serviceaccounts/{name}/token in {namespace}");
    let request = |node| {
        let body = token_request_body(lifetime, node);
        let pp = PostParams::default();
        c.call("create", &what, api.create_token_request(name, &pp, &body))
    };
    let (answer, unbound) = match node.map(|n| request(Some(n))) {
        Some(Err(
            e @ ClusterError::Api {
                code: 400 | 404 | 422,
                ..
            },
        )) => {
            let why = format!("the API server did not bind it to the Node: {e}");
            (request(None), Some(why))
        }
        Some(answer) => (answer, None),
        None => (request(None), None),
    };
    let answer = match answer {
        Err(e) if e.is_not_found() => return Err(no_account(c, namespace, name).into()),
        other => other?,
    };
    let status = answer.status.ok_or_else(|| ClusterError::Api {
        server: c.server.clone(),
        verb: "create".into(),
        resource: what,
        code: 200,
        message: "the answer has no status".into(),
    })?;
    Ok(Issued {
        token: Token::new(status.token),
        // kube-apiserver always sets it (to the JWT's exp).
        expires: Some(status.expiration_timestamp.0.as_second()),
        ca_pem: None,
        unbound,
    })
}

/// The TokenRequest every renewer sends, as the admission policies judge it
/// (`rights::calico_node_token_policy`).
pub fn token_request_body(
    lifetime: Duration,
    node: Option<&crate::k8s_name::NodeName>,
) -> TokenRequest {
    TokenRequest {
        metadata: ObjectMeta::default(),
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX)),
            bound_object_ref: node.map(|n| BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(n.to_string()),
                uid: None,
            }),
        },
        status: None,
    }
}

const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
const SA_ANNOTATION: &str = "kubernetes.io/service-account.name";

/// A long-lived token from a `kubernetes.io/service-account-token` secret of the account: an
/// existing one, else `<name>-token`, created and waited for (at most `timeout`) until the
/// token controller fills it.
pub fn legacy_secret(
    c: &Cluster,
    namespace: &str,
    name: &str,
    timeout: Duration,
    say: &mut dyn FnMut(&str),
) -> Result<Issued, anyhow::Error> {
    let api: Api<Secret> = Api::namespaced(c.client.clone(), namespace);
    let secret_name = token_secret(c, &api, namespace, name)?;
    let what = format!("secrets/{secret_name} in {namespace}");
    let look = || -> Result<Look<Issued, ()>, anyhow::Error> {
        let data = c
            .call("get", &what, api.get(&secret_name))?
            .data
            .unwrap_or_default();
        Ok(match data.get("token").filter(|t| !t.0.is_empty()) {
            Some(token) => Look::Done(Issued {
                token: Token::new(String::from_utf8_lossy(&token.0).trim().to_owned()),
                expires: None,
                ca_pem: data
                    .get("ca.crt")
                    .map(|c| String::from_utf8_lossy(&c.0).into_owned()),
                unbound: None,
            }),
            None => Look::Pending(()),
        })
    };
    // A command's wait: no service stop reaches it (Ctrl-C ends the command).
    let never = Stop::never();
    let wait = Wait {
        what: &format!("the token controller to fill {what}"),
        timeout,
        pauses: Pauses::every(Duration::from_millis(500)),
        stop: &never,
        say,
    };
    poll_until(wait, look, |()| {
        Err(CredentialError::TokenNotFilled {
            namespace: namespace.into(),
            name: secret_name.clone(),
            after: timeout,
        }
        .into())
    })
}

/// The name of the service account's token secret (see `legacy_secret`).
fn token_secret(
    c: &Cluster,
    api: &Api<Secret>,
    namespace: &str,
    name: &str,
) -> Result<String, anyhow::Error> {
    let listed = c.call(
        "list",
        &format!("secrets in {namespace}"),
        api.list(&ListParams::default().fields(&format!("type={TOKEN_SECRET_TYPE}"))),
    )?;
    let existing = listed
        .items
        .into_iter()
        .filter(|s| {
            s.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SA_ANNOTATION))
                .is_some_and(|a| a == name)
        })
        .min_by_key(|s| s.metadata.name.clone());
    Ok(match existing.and_then(|s| s.metadata.name) {
        Some(n) => n,
        None => {
            service_account(c, namespace, name)?;
            let secret_name = format!("{name}-token");
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name.clone()),
                    namespace: Some(namespace.into()),
                    annotations: Some(BTreeMap::from([(SA_ANNOTATION.into(), name.into())])),
                    ..ObjectMeta::default()
                },
                type_: Some(TOKEN_SECRET_TYPE.into()),
                ..Secret::default()
            };
            let what = format!("secrets/{secret_name} in {namespace}");
            let made = c.call("create", &what, api.create(&PostParams::default(), &secret));
            // A 409: someone made it meanwhile; theirs is used.
            if !matches!(made, Err(ClusterError::Api { code: 409, .. })) {
                made?;
            }
            secret_name
        }
    })
}

/// The CA calico-node's kubeconfig trusts: the admin kubeconfig's, else a legacy token
/// secret's, else the cluster's `kube-root-ca.crt` ConfigMap.
pub fn ca_for(c: &Cluster, namespace: &str, issued: &Issued) -> Result<String, anyhow::Error> {
    if let Some(ca) = c.ca_pem.as_ref().or(issued.ca_pem.as_ref()) {
        return Ok(ca.clone());
    }
    Ok(root_ca(c, namespace)?.ok_or_else(|| CredentialError::NoCa {
        server: c.server.clone(),
    })?)
}

fn root_ca(c: &Cluster, namespace: &str) -> Result<Option<String>, ClusterError> {
    Ok(c.get_in::<ConfigMap>(namespace, "kube-root-ca.crt")?
        .and_then(|m| m.data)
        .and_then(|d| d.get("ca.crt").cloned()))
}

/// The data of a secret, by key.
pub fn secret_data(
    c: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, anyhow::Error> {
    let secret = c
        .get_in::<Secret>(namespace, name)?
        .ok_or_else(|| CredentialError::NoSecret {
            server: c.server.clone(),
            namespace: namespace.into(),
            name: name.into(),
        })?;
    Ok(secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect())
}

impl crate::error::Diagnose for CredentialError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::Kind;
        let kind = match self {
            Self::NoServiceAccount { .. } => Kind::NoServiceAccount,
            Self::TokenNotFilled { .. } => Kind::TokenTimeout,
            _ => Kind::CredentialsMissing,
        };
        crate::error::Diagnosis::failed_or_timeout(
            matches!(self, Self::TokenNotFilled { .. }),
            kind,
            Some(self.hint()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// client-go's order (see `node_token_in`): the file's token, trimmed, while the file can
    /// be read and is not empty; the inline token otherwise.
    #[test]
    fn the_token_files_token_goes_first_and_the_inline_one_is_the_fallback() {
        use crate::host::{Access, Files, sim::SimHost};
        let host = SimHost::in_memory("ws2022").expect("host");
        let kubeconfig = |user: &str| {
            format!(
                "contexts:\n- name: a\n  context:\n    user: u\ncurrent-context: a\nusers:\n- name: u\n  user:\n{user}"
            )
        };
        let token = |text: &str| {
            node_token_in(&host, text)
                .expect("read")
                .map(|t| t.expose().to_owned())
        };
        let file = r"C:\CalicoWindows\calico-kube-config.token";
        let both = kubeconfig(&format!("    token: inline\n    tokenFile: '{file}'\n"));
        let only_file = kubeconfig(&format!("    tokenFile: '{file}'\n"));
        // No file yet: the inline token; with only the file named, none.
        assert_eq!(token(&both).as_deref(), Some("inline"));
        assert_eq!(token(&only_file), None);
        host.replace_file(file, b"from-file\r\n", Access::Secret)
            .expect("write");
        assert_eq!(token(&both).as_deref(), Some("from-file"));
        assert_eq!(token(&only_file).as_deref(), Some("from-file"));
        // An empty file, or one past the cap, is no token: the inline one again.
        host.replace_file(file, b" \r\n", Access::Secret)
            .expect("write");
        assert_eq!(token(&both).as_deref(), Some("inline"));
        assert_eq!(token(&only_file), None);
        host.replace_file(file, &vec![b'a'; TOKEN_FILE_CAP + 1], Access::Secret)
            .expect("write");
        assert_eq!(token(&both).as_deref(), Some("inline"));
        // A file that cannot be read: the inline token, else the error, which names the file.
        host.remove_file(file).expect("remove");
        host.create_dir(file)
            .expect("a directory where the file was");
        assert_eq!(token(&both).as_deref(), Some("inline"));
        // No expect_err: a token has no Debug.
        let Err(err) = node_token_in(&host, &only_file) else {
            panic!("a directory is no token file");
        };
        assert!(err.to_string().contains(file), "{err}");
        assert_eq!(token(&kubeconfig("    username: x\n")), None);
    }

    #[test]
    fn expiry_comes_from_the_exp_claim() {
        assert_eq!(
            Token::jwt(r#"{"exp":1800000000,"sub":"x"}"#).expiry(),
            Some(1_800_000_000)
        );
        assert_eq!(Token::jwt(r#"{"sub":"x"}"#).expiry(), None);
        let sa = Token::jwt(r#"{"iat":5,"sub":"system:serviceaccount:calico-system:calico-node"}"#);
        assert_eq!(sa.issued_at(), Some(5));
        assert_eq!(
            sa.service_account(),
            Some(("calico-system".into(), "calico-node".into()))
        );
        assert_eq!(Token::jwt(r#"{"sub":"admin"}"#).service_account(), None);
        assert_eq!(Token::new("not-a-jwt").expiry(), None);
        let t = Token::jwt(r#"{"exp":1000}"#);
        assert_eq!(t.outlives(999), Some(Some(1000)));
        assert_eq!(t.outlives(1000), None);
        assert_eq!(Token::jwt("{}").outlives(i64::MAX), Some(None));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let t = Token::new("secret-value");
        assert!(!format!("{t:?}").contains("secret-value"));
        let issued = Issued {
            token: t,
            expires: None,
            ca_pem: None,
            unbound: None,
        };
        assert!(!format!("{issued:?}").contains("secret-value"));
    }

    #[test]
    fn claims_that_are_no_time_make_a_token_unusable() {
        let t = Token::jwt(&format!(r#"{{"exp":{}}}"#, i64::MAX));
        assert_eq!(t.expiry(), None);
        assert!(t.unusable().is_some_and(|w| w.contains("'exp'")));
        let t = Token::jwt(r#"{"iat":2000,"exp":1000}"#);
        assert!(t.unusable().is_some_and(|w| w.contains("no later than")));
        assert!(
            Token::jwt(r#"{"iat":1000,"exp":2000}"#)
                .unusable()
                .is_none()
        );
        assert!(Token::new("opaque").unusable().is_none());
        assert!(!Token::new("opaque").is_jwt());
        assert_eq!(Token::new("a").fingerprint().len(), 16);
    }
}
