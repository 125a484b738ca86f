//! TokenReview (`POST /apis/authentication.k8s.io/v1/tokenreviews`), as kube-apiserver answers
//! it (kubernetes/kubernetes `pkg/registry/authentication/tokenreview/storage.go`, `REST.Create`):
//! the token is authenticated for `spec.audiences`, else for the API server's own; a token the
//! server does not take is answered `authenticated: false` with the authenticator's error (not
//! an HTTP error); an authenticated one names its user and the audiences it was authenticated
//! for (the requested ones it shares: a token without audiences shares the API server's alone,
//! `serve::token_audiences`). Who may ask is RBAC's `create tokenreviews`, checked
//! before this like every create.

use super::State;
use super::serve::{API_AUDIENCE, jwt_claims, respond, token_audiences, valid_for};
use hyper::StatusCode;
use serde_json::{Value, json};

pub(super) fn review(st: &State, body: &Value) -> super::serve::Reply {
    let token = body["spec"]["token"].as_str().unwrap_or_default();
    let asked: Vec<&str> = body["spec"]["audiences"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .filter(|a: &Vec<&str>| !a.is_empty())
        .unwrap_or_else(|| vec![API_AUDIENCE]);
    let claims = jwt_claims(token).unwrap_or_default();
    let audiences = token_audiences(&claims);
    let status = if valid_for(st, token, &asked) {
        let shared: Vec<&str> = asked
            .iter()
            .copied()
            .filter(|w| audiences.iter().any(|a| a == w))
            .collect();
        let user = claims["sub"].as_str().unwrap_or("admin");
        json!({"authenticated": true, "audiences": shared,
            "user": {"username": user, "groups": ["system:serviceaccounts", "system:authenticated"]}})
    } else {
        json!({"authenticated": false,
            "error": format!("[invalid bearer token, token audiences {audiences:?} is invalid for the target audiences {asked:?}]")})
    };
    respond(
        StatusCode::CREATED,
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {"creationTimestamp": null}, "spec": body["spec"], "status": status}),
    )
}
