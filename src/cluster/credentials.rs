//! Credentials for calico-node: a service-account token (TokenRequest, or a legacy token
//! secret) made into a kubeconfig, and the etcd TLS files from their secret. Secrets are
//! kept in types whose `Debug` never shows them.

use super::{Cluster, ClusterError};
use base64::Engine;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::Api;
use kube::api::{ListParams, ObjectMeta, PostParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The expiry (Unix seconds) in a JWT's `exp` claim; `None` for a token that does not
    /// expire (a legacy secret's) or is not a JWT.
    pub fn expiry(&self) -> Option<i64> {
        self.claims()?.get("exp")?.as_i64()
    }

    /// The JWT's claims; `None` when it is not a JWT.
    fn claims(&self) -> Option<serde_json::Value> {
        let payload = self.0.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// When it was issued (Unix seconds, the `iat` claim).
    pub fn issued_at(&self) -> Option<i64> {
        self.claims()?.get("iat")?.as_i64()
    }

    /// The service account a service-account token is for, from its subject
    /// `system:serviceaccount:NAMESPACE:NAME`.
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

/// The most a token file may hold: a service-account JWT is a few kilobytes.
pub const TOKEN_FILE_CAP: usize = 64 * 1024;

/// calico-node's token on the node, as client-go picks it from its kubeconfig at `path`.
/// `None` when the kubeconfig is missing or names no token that can be had.
pub fn node_token(
    host: &dyn crate::host::Host,
    path: &str,
) -> crate::host::HostResult<Option<Token>> {
    let Some(bytes) = host.read_file(path)? else {
        return Ok(None);
    };
    node_token_in(host, &String::from_utf8_lossy(&bytes))
}

/// calico-node's token, given the text of its kubeconfig (parsed once), in client-go's order:
/// the token in the file the kubeconfig names (`tokenFile`), trimmed, whenever that file can
/// be read and is not empty, else the one it holds inline (`token`). That is what client-go
/// sends (kubernetes v1.20.2, staging/src/k8s.io/client-go: transport/round_trippers.go,
/// `bearerAuthRoundTripper.RoundTrip` prefers its file source's token and falls back on the
/// inline one; transport/token_source.go, `fileTokenSource.Token` trims it and refuses an
/// empty one). A file over `TOKEN_FILE_CAP` counts as unreadable. An error reading the file
/// is the answer only when there is no inline token to fall back on.
pub fn node_token_in(
    host: &dyn crate::host::Host,
    kubeconfig: &str,
) -> crate::host::HostResult<Option<Token>> {
    let Some(source) = crate::render::kubeconfig::token_source(kubeconfig) else {
        return Ok(None);
    };
    let from_file = source.file.as_deref().map(|file| {
        host.read_file(file).map(|bytes| {
            bytes
                .filter(|b| b.len() <= TOKEN_FILE_CAP)
                .map(|b| Token::new(String::from_utf8_lossy(&b).trim().to_owned()))
                .filter(|t| !t.expose().is_empty())
        })
    });
    match (from_file, source.inline) {
        (Some(Ok(Some(token))), _) => Ok(Some(token)),
        (_, Some(inline)) => Ok(Some(Token::new(inline))),
        (Some(Err(e)), None) => Err(e),
        (Some(Ok(None)) | None, None) => Ok(None),
    }
}

/// `Some(expiry)` when `token` is valid for longer than `within` from now (`Some(None)`: a
/// token that never expires); `None` when a new one is needed.
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
}

/// The service account, or a clear error when it does not exist.
pub fn service_account(c: &Cluster, namespace: &str, name: &str) -> Result<(), anyhow::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(c.client.clone(), namespace);
    let what = format!("serviceaccounts/{name} in {namespace}");
    match c.call_opt("get", &what, api.get(name))? {
        Some(_) => Ok(()),
        None => Err(CredentialError::NoServiceAccount {
            server: c.server.clone(),
            namespace: namespace.into(),
            name: name.into(),
        }
        .into()),
    }
}

/// A token from the TokenRequest API, asked to live `lifetime` (the server may shorten it).
pub fn token_request(
    c: &Cluster,
    namespace: &str,
    name: &str,
    lifetime: Duration,
) -> Result<Issued, anyhow::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(c.client.clone(), namespace);
    let request = TokenRequest {
        metadata: ObjectMeta::default(),
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX)),
            bound_object_ref: None,
        },
        status: None,
    };
    let what = format!("serviceaccounts/{name}/token in {namespace}");
    let answer = match c.call(
        "create",
        &what,
        api.create_token_request(name, &PostParams::default(), &request),
    ) {
        Err(e) if e.is_not_found() => {
            return Err(CredentialError::NoServiceAccount {
                server: c.server.clone(),
                namespace: namespace.into(),
                name: name.into(),
            }
            .into());
        }
        other => other?,
    };
    let status = answer.status.ok_or_else(|| ClusterError::Api {
        server: c.server.clone(),
        verb: "create".into(),
        resource: what,
        code: 200,
        message: "the answer has no status".into(),
    })?;
    let token = Token::new(status.token);
    let expires = token
        .expiry()
        .or_else(|| Some(status.expiration_timestamp.0.as_second()));
    Ok(Issued {
        token,
        expires,
        ca_pem: None,
    })
}

const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
const SA_ANNOTATION: &str = "kubernetes.io/service-account.name";

/// A long-lived token from a `kubernetes.io/service-account-token` secret of the service
/// account: an existing one, else `<name>-token`, created and waited for until the token
/// controller fills it (at most `timeout`).
pub fn legacy_secret(
    c: &Cluster,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> Result<Issued, anyhow::Error> {
    let api: Api<Secret> = Api::namespaced(c.client.clone(), namespace);
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
    let secret_name = match existing.and_then(|s| s.metadata.name) {
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
            match c.call("create", &what, api.create(&PostParams::default(), &secret)) {
                // Someone made it meanwhile: use theirs.
                Err(ClusterError::Api { code: 409, .. }) => {}
                other => {
                    other?;
                }
            }
            secret_name
        }
    };
    let started = Instant::now();
    loop {
        let what = format!("secrets/{secret_name} in {namespace}");
        let data = c
            .call("get", &what, api.get(&secret_name))?
            .data
            .unwrap_or_default();
        if let Some(token) = data.get("token").filter(|t| !t.0.is_empty()) {
            return Ok(Issued {
                token: Token::new(String::from_utf8_lossy(&token.0).trim().to_owned()),
                expires: None,
                ca_pem: data
                    .get("ca.crt")
                    .map(|c| String::from_utf8_lossy(&c.0).into_owned()),
            });
        }
        if started.elapsed() >= timeout {
            return Err(CredentialError::TokenNotFilled {
                namespace: namespace.into(),
                name: secret_name,
                after: timeout,
            }
            .into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The CA calico-node's kubeconfig trusts: the admin kubeconfig's, else the one a legacy
/// token secret carries, else the cluster's `kube-root-ca.crt` ConfigMap.
pub fn ca_for(c: &Cluster, namespace: &str, issued: &Issued) -> Result<String, anyhow::Error> {
    if let Some(ca) = c.ca_pem.as_ref().or(issued.ca_pem.as_ref()) {
        return Ok(ca.clone());
    }
    Ok(root_ca(c, namespace)?.ok_or_else(|| CredentialError::NoCa {
        server: c.server.clone(),
    })?)
}

/// The cluster's CA from the `kube-root-ca.crt` ConfigMap every namespace has.
fn root_ca(c: &Cluster, namespace: &str) -> Result<Option<String>, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), namespace);
    Ok(c.call_opt(
        "get",
        &format!("configmaps/kube-root-ca.crt in {namespace}"),
        api.get("kube-root-ca.crt"),
    )?
    .and_then(|m| m.data)
    .and_then(|d| d.get("ca.crt").cloned()))
}

/// The data of a secret, by key; a missing secret is a clear error.
pub fn secret_data(
    c: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, anyhow::Error> {
    let api: Api<Secret> = Api::namespaced(c.client.clone(), namespace);
    let what = format!("secrets/{name} in {namespace}");
    let secret =
        c.call_opt("get", &what, api.get(name))?
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

    fn jwt(claims: &str) -> String {
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", enc(r#"{"alg":"RS256"}"#), enc(claims))
    }

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
            Token::new(jwt(r#"{"exp":1800000000,"sub":"x"}"#)).expiry(),
            Some(1_800_000_000)
        );
        assert_eq!(Token::new(jwt(r#"{"sub":"x"}"#)).expiry(), None);
        let sa = Token::new(jwt(
            r#"{"iat":5,"sub":"system:serviceaccount:calico-system:calico-node"}"#,
        ));
        assert_eq!(sa.issued_at(), Some(5));
        assert_eq!(
            sa.service_account(),
            Some(("calico-system".into(), "calico-node".into()))
        );
        assert_eq!(
            Token::new(jwt(r#"{"sub":"admin"}"#)).service_account(),
            None
        );
        assert_eq!(Token::new("not-a-jwt").expiry(), None);
        let t = Token::new(jwt(r#"{"exp":1000}"#));
        assert_eq!(t.outlives(999), Some(Some(1000)));
        assert_eq!(t.outlives(1000), None);
        assert_eq!(Token::new(jwt("{}")).outlives(i64::MAX), Some(None));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let t = Token::new("secret-value");
        assert!(!format!("{t:?}").contains("secret-value"));
        let issued = Issued {
            token: t,
            expires: None,
            ca_pem: None,
        };
        assert!(!format!("{issued:?}").contains("secret-value"));
    }
}
