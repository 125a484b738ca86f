//! The cluster as the survey sees it: calico-node's token asked of the API server first, then
//! the cluster read with the admin kubeconfig, handed the Node that request read.

use crate::cluster::read::ClusterRead;
use crate::cluster::token_check;
use crate::config::Config;
use crate::host::Host;
use crate::k8s_name::NodeName;
use std::collections::BTreeMap;

/// The cluster as the survey sees it: the API server's answer to calico-node's token, and the
/// cluster read with the admin kubeconfig (`see`).
pub struct Seen {
    pub asked: Option<token_check::Answer>,
    pub cluster: ClusterRead,
}

/// The API server asked first whether it takes calico-node's token, offline too (the fleet
/// DaemonSet's readiness), then the cluster read by `read` (with the admin kubeconfig, or
/// skipped), given the Node the token's request read: the Node this look judges is read once,
/// and so are the node's pods.
pub fn see(
    env: &BTreeMap<String, String>,
    host: &dyn Host,
    config: &Config,
    node: &NodeName,
    read: impl FnOnce(Option<k8s_openapi::api::core::v1::Node>) -> anyhow::Result<ClusterRead>,
) -> anyhow::Result<Seen> {
    let mut asked = ask_token(env, host, config, node);
    let known = match &mut asked {
        Some(token_check::Answer::Accepted(node)) => node.take().map(|n| *n),
        _ => None,
    };
    let cluster = read(known)?;
    if let ClusterRead::Read(c, _) = &cluster {
        c.keep_one_look();
    }
    Ok(Seen { asked, cluster })
}

/// Whether the API server takes calico-node's token now (`cluster::token_check`), asked with
/// the kubeconfig install wrote for calico-node; `None` where there is none to ask with.
fn ask_token(
    env: &BTreeMap<String, String>,
    host: &dyn Host,
    config: &Config,
    node_name: &NodeName,
) -> Option<token_check::Answer> {
    let path = config.kubeconfig.as_ref()?.as_str().to_owned();
    let text = String::from_utf8_lossy(&host.read_file(&path).ok()??).into_owned();
    let token = crate::cluster::credentials::node_token_in(host, &text).ok()??;
    if token.unusable().is_some() {
        return None;
    }
    Some(token_check::ask((&path, &text), &token, env, node_name))
}
