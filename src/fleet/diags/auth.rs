//! The credential `fleet diags` gives each node's `GET /diags`, and how the node checks it.
//! kube-apiserver drops the `Authorization` header of a request it authenticated
//! (k8s.io/apiserver `pkg/endpoints/filters/authentication.go`), so the token travels in
//! `HEADER`, which the pod proxy passes on (`pkg/util/proxy/upgradeaware.go`): a TokenRequest of
//! `ACCOUNT` per node, audience `calicoctl-win-diags:<node>` (that node's alone, no API
//! server's), for the least lifetime granted (`pkg/apis/authentication/validation/validation.go`).
//! The node lets in only `ACCOUNT`'s username, by a TokenReview with that audience alone.

use crate::cluster::{Cluster, ClusterError};
use crate::duration::Stop;
use crate::k8s_name::NodeName;
use k8s_openapi::api::authentication::v1::{
    TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{ObjectMeta, PostParams};

/// The ServiceAccount whose tokens the nodes take, in the DaemonSet's namespace.
pub const ACCOUNT: &str = "calicoctl-win-diags";
/// The request header the token travels in (lower case, as HTTP/2 and `http` write it).
pub const HEADER: &str = "calicoctl-win-diags-token";
/// The token's lifetime: the least kube-apiserver grants.
pub const TOKEN_SECONDS: i64 = 600;

/// The audience of a token for `node`.
pub fn audience(node: &NodeName) -> String {
    format!("{ACCOUNT}:{node}")
}

/// The username kube-apiserver gives `ACCOUNT`'s tokens in `namespace`.
pub fn username(namespace: &str) -> String {
    format!("system:serviceaccount:{namespace}:{ACCOUNT}")
}

/// A token for `node`'s `GET /diags`; never logged, never in an error.
pub async fn mint(
    client: &kube::Client,
    namespace: &str,
    node: &NodeName,
) -> Result<String, String> {
    let api: kube::Api<ServiceAccount> = kube::Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        metadata: ObjectMeta::default(),
        spec: TokenRequestSpec {
            audiences: vec![audience(node)],
            expiration_seconds: Some(TOKEN_SECONDS),
            bound_object_ref: None,
        },
        status: None,
    };
    let answer = api
        .create_token_request(ACCOUNT, &PostParams::default(), &request)
        .await
        .map_err(|e| format!("create serviceaccounts/{ACCOUNT}/token in {namespace}: {e}"))?;
    answer
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("serviceaccounts/{ACCOUNT}/token in {namespace}: no token"))
}

/// What a TokenReview said of a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The token is `ACCOUNT`'s in the expected namespace, for this node.
    Allowed,
    /// The token is not (said without the token).
    Denied(String),
    /// Not authenticated, and the authenticator said why (`status.error`): a refusal that may
    /// pass (a signing key or ServiceAccount another API server has not seen yet). Refused,
    /// but not remembered as refused.
    Unsettled(String),
    /// The review itself was refused or failed: nothing can be let in.
    Failed { forbidden: bool, why: String },
}

/// Reviews `token` for `node`'s audience as `c` (CalicoNode's identity, which needs `create
/// tokenreviews`): allowed only when authenticated as `ACCOUNT` in `namespace`.
pub fn review(c: &Cluster, token: &str, node: &NodeName, namespace: &str) -> Verdict {
    review_until(c, token, node, namespace, &Stop::never())
}

/// `review`, but a stop abandons the review under way (the request is dropped), so that
/// CalicoNode's stop does not wait for the API server's answer.
pub fn review_until(
    c: &Cluster,
    token: &str,
    node: &NodeName,
    namespace: &str,
    stop: &Stop,
) -> Verdict {
    let api: kube::Api<TokenReview> = kube::Api::all(c.client.clone());
    let asked = TokenReview {
        metadata: ObjectMeta::default(),
        spec: TokenReviewSpec {
            audiences: Some(vec![audience(node)]),
            token: Some(token.to_owned()),
        },
        status: None,
    };
    let params = PostParams::default();
    let what = ("create", "tokenreviews");
    match c.call_unless(
        stop,
        crate::cluster::CALL_TIMEOUT,
        what,
        api.create(&params, &asked),
    ) {
        Ok(r) => judge(r, node, namespace),
        Err(_) if stop.requested() => Verdict::Failed {
            forbidden: false,
            why: "CalicoNode is stopping: the review was abandoned".into(),
        },
        Err(e) => Verdict::Failed {
            forbidden: matches!(e, ClusterError::Api { code: 403, .. }),
            why: e.to_string(),
        },
    }
}

fn judge(r: TokenReview, node: &NodeName, namespace: &str) -> Verdict {
    let Some(status) = r.status else {
        return Verdict::Denied("the review has no status".into());
    };
    if status.authenticated != Some(true) {
        // An authenticator's error comes beside `authenticated: false`
        // (`pkg/registry/authentication/tokenreview/storage.go`); its text may quote the
        // token's claims, and is not kept.
        let why = "the token is not authenticated for this node".to_owned();
        return match status.error.filter(|e| !e.is_empty()) {
            Some(_) => Verdict::Unsettled(format!("{why} (the API server gave an error)")),
            None => Verdict::Denied(why),
        };
    }
    let user = status.user.and_then(|u| u.username).unwrap_or_default();
    let want = username(namespace);
    if user != want {
        return Verdict::Denied(format!("the token is {user:?}'s, not {want:?}'s"));
    }
    // The audiences it was authenticated for (`status.audiences`): ours must be among them.
    let ours = audience(node);
    if status.audiences.is_some_and(|a| a.contains(&ours)) {
        Verdict::Allowed
    } else {
        Verdict::Denied(format!("the token is not for {ours:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::TokenReviewStatus;

    fn answered(error: Option<&str>) -> TokenReview {
        TokenReview {
            metadata: ObjectMeta::default(),
            spec: TokenReviewSpec::default(),
            status: Some(TokenReviewStatus {
                authenticated: Some(false),
                error: error.map(str::to_owned),
                ..TokenReviewStatus::default()
            }),
        }
    }

    /// A refusal the authenticator explained (an error beside `authenticated: false`, as
    /// kube-apiserver's `REST.Create` reports it) may pass, and is told apart from a plain one;
    /// the error's text is not repeated.
    #[test]
    fn a_refusal_with_the_authenticators_error_is_unsettled_and_its_text_not_kept() {
        let why = "square/go-jose: error in cryptographic primitive";
        match judge(answered(Some(why)), &"win-1".into(), "ns") {
            Verdict::Unsettled(said) => assert!(!said.contains("go-jose"), "{said}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            judge(answered(None), &"win-1".into(), "ns"),
            Verdict::Denied(_)
        ));
        assert!(matches!(
            judge(answered(Some("")), &"win-1".into(), "ns"),
            Verdict::Denied(_)
        ));
    }
}
