//! Why the API server refuses calico-node's token (401), told apart from what the token says
//! and what the cluster announces now:
//! - `expired`: its `exp` has passed, by the API server's clock where the skew is known;
//! - `serviceaccount-recreated`: its service account uid (kubernetes
//!   `pkg/serviceaccount/claims.go`) is not the current ServiceAccount's;
//! - `node-deleted`: the Node it is bound to is gone or has another uid (told before the
//!   issuer, which may differ for a valid token);
//! - `issuer-changed`: its `iss` differs from the first announced issuer (kube-apiserver
//!   accepts every `--service-account-issuer` and announces the first:
//!   `pkg/controlplane/apiserver/config.go`), which an issuer rotation makes without refusing;
//! - `signing-key`: none of these, so the key that signed it is no longer trusted (rotated).

use super::Cluster;
use super::token::credentials::Token;
use serde::Serialize;

/// What the cluster says now, as far as it could be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Now {
    /// The calico-node ServiceAccount's uid; `None` when it could not be read.
    pub service_account_uid: Option<String>,
    /// Whether the ServiceAccount was read and does not exist.
    pub service_account_missing: bool,
    /// The issuer at `/.well-known/openid-configuration`.
    pub issuer: Option<String>,
    /// The Node the token is bound to was read and is gone (or is another Node of its name).
    pub bound_node_gone: bool,
    /// This node's clock minus the API server's (`IssuedRecord::skew`), when known.
    pub clock_skew: Option<i64>,
}

/// The cause of a 401.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", rename_all = "kebab-case")]
pub enum Cause {
    Expired {
        at: i64,
        ago: i64,
        skew: Option<i64>,
    },
    ServiceaccountRecreated {
        token: String,
        now: Option<String>,
    },
    IssuerChanged {
        token: String,
        now: String,
    },
    NodeDeleted {
        node: String,
    },
    SigningKey,
}

impl Cause {
    /// The cause's word, as JSON has it: `expired`, `serviceaccount-recreated` ...
    pub fn word(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or_default();
        v["cause"].as_str().unwrap_or_default().to_owned()
    }

    pub fn describe(&self) -> String {
        match self {
            Cause::Expired { at, ago, skew } => format!(
                "it expired at {} ({} ago by {})",
                crate::duration::time_text(*at),
                crate::duration::show(std::time::Duration::from_secs((*ago).max(0) as u64)),
                match skew {
                    Some(s) if *s != 0 => format!(
                        "the API server's clock; this node's is {}s {} it",
                        s.unsigned_abs(),
                        if *s > 0 { "ahead of" } else { "behind" }
                    ),
                    Some(_) => "the API server's clock, which is this node's".into(),
                    None => "this node's clock, whose difference with the API server's is not known".into(),
                }
            ),
            Cause::ServiceaccountRecreated { token, now } => match now {
                Some(now) => format!(
                    "the calico-node ServiceAccount was made again: the token is of uid {token}, the account's uid is now {now}"
                ),
                None => format!(
                    "the calico-node ServiceAccount the token is of (uid {token}) no longer exists"
                ),
            },
            Cause::IssuerChanged { token, now } => format!(
                "the token's issuer {token} differs from the first announced issuer {now} (/.well-known/openid-configuration): the service-account issuer changed, and the API server no longer accepts the token's"
            ),
            Cause::NodeDeleted { node } => format!(
                "it is bound to the Node {node}, which was deleted (deleting a Node revokes the tokens bound to it)"
            ),
            Cause::SigningKey => "its issuer and service account are current, so the key that signed it is no longer trusted (the signing key was rotated)".into(),
        }
    }

    /// What to do about it.
    pub fn remedy(&self) -> &'static str {
        match self {
            Cause::Expired { .. } => {
                "check the node's clock against the API server's, then issue a new token ('calicoctl-win fetch kubeconfig')"
            }
            Cause::ServiceaccountRecreated { .. } => {
                "issue a new token for the new account ('calicoctl-win fetch kubeconfig', or the fleet DaemonSet's 'service keep-token' does it); the renewal grant is by name and stays"
            }
            Cause::NodeDeleted { .. } => {
                "once kubelet has registered the Node again, issue a new token ('calicoctl-win fetch kubeconfig')"
            }
            Cause::IssuerChanged { .. } | Cause::SigningKey => {
                "issue a new token ('calicoctl-win fetch kubeconfig', or the fleet DaemonSet's 'service keep-token' does it): every token of the old issuer or key is refused"
            }
        }
    }
}

/// The cause, from the token and the cluster now (`now_secs` by this node's clock, judged on
/// the API server's where the skew is known); `None` when nothing could be read to tell it by.
pub fn cause(token: &Token, now_secs: i64, now: &Now) -> Option<Cause> {
    let server_now = now_secs.saturating_sub(now.clock_skew.unwrap_or(0));
    if let Some(exp) = token.expiry().filter(|e| *e <= server_now) {
        return Some(Cause::Expired {
            at: exp,
            ago: server_now - exp,
            skew: now.clock_skew,
        });
    }
    if let Some(node) = token.bound_node().filter(|_| now.bound_node_gone) {
        return Some(Cause::NodeDeleted { node });
    }
    if let Some(uid) = token.service_account_uid() {
        if now.service_account_missing {
            return Some(Cause::ServiceaccountRecreated {
                token: uid,
                now: None,
            });
        }
        if let Some(current) = &now.service_account_uid
            && *current != uid
        {
            return Some(Cause::ServiceaccountRecreated {
                token: uid,
                now: Some(current.clone()),
            });
        }
    }
    if let (Some(iss), Some(current)) = (token.issuer(), &now.issuer)
        && iss != *current
    {
        return Some(Cause::IssuerChanged {
            token: iss,
            now: current.clone(),
        });
    }
    (now.service_account_uid.is_some() && now.issuer.is_some()).then_some(Cause::SigningKey)
}

/// Reads what `cause` compares: the ServiceAccount `name` in `namespace`, the announced
/// issuer and the Node `token` is bound to. What cannot be read stays unknown.
pub fn read_now(c: &Cluster, token: &Token, (namespace, name): (&str, &str)) -> Now {
    let sa = c.get_in::<k8s_openapi::api::core::v1::ServiceAccount>(namespace, name);
    let issuer = http::Request::get("/.well-known/openid-configuration")
        .body(Vec::new())
        .ok()
        .and_then(|req| {
            c.call(
                "get",
                ".well-known/openid-configuration",
                c.client.request::<serde_json::Value>(req),
            )
            .ok()
        })
        .and_then(|v| v["issuer"].as_str().map(str::to_owned));
    let bound_node_gone = token.bound_node().is_some_and(|node| {
        match super::node::get(c, &crate::k8s_name::NodeName::from_api(node)) {
            Ok(None) => true,
            Ok(Some(n)) => n.metadata.uid != token.bound_node_uid(),
            Err(_) => false,
        }
    });
    Now {
        service_account_uid: sa
            .as_ref()
            .ok()
            .and_then(|s| s.as_ref()?.metadata.uid.clone()),
        service_account_missing: matches!(sa, Ok(None)),
        issuer,
        bound_node_gone,
        clock_skew: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: serde_json::Value) -> Token {
        Token::jwt(&claims.to_string())
    }

    const NOW: i64 = 1_800_000_000;

    fn current() -> Now {
        Now {
            service_account_uid: Some("uid-2".into()),
            service_account_missing: false,
            issuer: Some("https://kubernetes.default.svc".into()),
            bound_node_gone: false,
            clock_skew: Some(30),
        }
    }

    fn of(uid: &str, iss: &str, exp: i64) -> Token {
        token(serde_json::json!({"iss": iss, "exp": exp, "iat": NOW - 100,
            "kubernetes.io": {"namespace": "calico-system",
                "serviceaccount": {"name": "calico-node", "uid": uid}}}))
    }

    /// What tests/lifecycle/token_trouble.rs does not tell through `status`: the expiry said
    /// by the API server's clock, a ServiceAccount gone, a deleted Node told before the
    /// issuer, and nothing read (signing-key, serviceaccount-recreated, issuer-changed and
    /// node-deleted are told there: `status_names_the_cause_of_a_refused_token`,
    /// `tokens_are_bound_to_the_node_where_the_server_allows_and_status_says_which`).
    #[test]
    fn each_cause_of_a_401_is_told_apart() {
        let iss = "https://kubernetes.default.svc";
        let w = |t: &Token, now: &Now| cause(t, NOW, now).map(|c| c.word());
        let (expired, deleted) = (Some("expired".to_owned()), Some("node-deleted".to_owned()));
        let said = cause(&of("uid-2", iss, NOW - 60), NOW, &current()).map(|c| c.describe());
        assert!(
            said.as_deref()
                .is_some_and(|s| s
                    .contains("30s ago by the API server's clock; this node's is 30s ahead of it")),
            "{said:?}"
        );
        let gone = Now {
            service_account_uid: None,
            service_account_missing: true,
            ..current()
        };
        assert_eq!(
            cause(&of("uid-2", iss, NOW + 600), NOW, &gone).map(|c| c.describe()),
            Some(
                "the calico-node ServiceAccount the token is of (uid uid-2) no longer exists"
                    .into()
            )
        );
        let bound = token(serde_json::json!({"iss": iss, "exp": NOW + 600,
            "kubernetes.io": {"namespace": "calico-system",
                "serviceaccount": {"name": "calico-node", "uid": "uid-2"},
                "node": {"name": "win-1", "uid": "n-1"}}}));
        // A deleted Node is told before the issuer: during an issuer rotation the token's may
        // differ from the first announced one and still be accepted.
        let rotated = Now {
            issuer: Some("https://new.example".into()),
            bound_node_gone: true,
            ..current()
        };
        assert_eq!(w(&bound, &rotated), deleted);
        // Nothing read: nothing to tell by, unless the token says it expired.
        assert_eq!(w(&of("uid-2", iss, NOW + 600), &Now::default()), None);
        assert_eq!(w(&of("uid-2", iss, NOW - 1), &Now::default()), expired);
    }
}
