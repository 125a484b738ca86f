//! Whether the API server takes calico-node's token now: a GET of the node's own Node with
//! calico-node's kubeconfig (its ClusterRole allows it: tigera/operator `pkg/render/node.go`,
//! `nodeRole`). Authentication comes before all else (apiserver `pkg/server/config.go`,
//! `DefaultBuildHandlerChain`), so only a 401 is the token refused.

use super::credentials::Token;
use crate::cluster::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::Node;

/// How long the question may take: within the fleet DaemonSet's 20 s readiness probe, a
/// server silent for 5 s leaves the answer unknown.
const WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// What the API server said of the token.
#[derive(Debug)]
pub enum Answer {
    /// It took the token; the Node (`None`: none, or the token may not read it).
    Accepted(Option<Box<Node>>),
    /// It refused the token (401), with its message.
    Refused(String),
    /// No answer that tells either, said.
    Unknown(String),
}

impl Answer {
    /// The answer's word, as JSON has it.
    pub fn word(&self) -> &'static str {
        match self {
            Answer::Accepted(_) => "accepted",
            Answer::Refused(_) => "refused",
            Answer::Unknown(_) => "unknown",
        }
    }
}

/// Asks, with the kubeconfig at `path` (its text `kubeconfig`) and `token` as its credential,
/// for the Node `node`.
pub fn ask(
    (path, kubeconfig): (&str, &str),
    token: &Token,
    env: &std::collections::BTreeMap<String, String>,
    node: &NodeName,
) -> Answer {
    let c = match Cluster::connect_as_node(path, kubeconfig, token, env) {
        Ok(c) => c,
        Err(e) => return Answer::Unknown(e.to_string()),
    };
    let nodes: kube::Api<Node> = kube::Api::all(c.client.clone());
    let what = format!("nodes/{node}");
    judge(
        match c.call_within(WITHIN, ("get", &what), nodes.get(node.as_str())) {
            Err(e) if e.is_not_found() => Ok(None),
            other => other.map(Some),
        },
    )
}

fn judge(answer: Result<Option<Node>, ClusterError>) -> Answer {
    match answer {
        Ok(n) => Answer::Accepted(n.map(Box::new)),
        Err(ClusterError::Api {
            code: 401, message, ..
        }) => Answer::Refused(message),
        Err(ClusterError::Api { code: 403, .. }) => Answer::Accepted(None),
        Err(e) => Answer::Unknown(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> ClusterError {
        ClusterError::Api {
            server: "https://k".into(),
            verb: "get".into(),
            resource: "nodes/win-1".into(),
            code,
            message: "Unauthorized".into(),
        }
    }

    #[test]
    fn only_a_401_is_a_refused_token() {
        assert_eq!(judge(Err(api(401))).word(), "refused");
        // Authenticated, then not allowed: the token was taken.
        assert_eq!(judge(Err(api(403))).word(), "accepted");
        assert_eq!(judge(Ok(None)).word(), "accepted");
        assert_eq!(judge(Err(api(500))).word(), "unknown");
    }
}
