//! The zip's `versions.json`: what runs the node.

use crate::context::Context;
use crate::host::Host;
use crate::installed::record::InstallRecord;

/// The zip's `versions.json`.
#[derive(serde::Serialize)]
pub(super) struct Versions {
    calicoctl_win: Build,
    os_build: String,
    calico: Option<String>,
    calicoctl_win_that_installed: Option<String>,
    /// The Node's `nodeInfo`, or why it was not read.
    node_info: NodeInfo,
}

/// This calicoctl-win's build.
#[derive(serde::Serialize)]
struct Build {
    version: &'static str,
    commit: &'static str,
    build_date: &'static str,
}

/// What the node reports of the software running it, or why it was not read.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum NodeInfo {
    Read(Box<k8s_openapi::api::core::v1::NodeSystemInfo>),
    Not(String),
}

/// The versions of what runs the node: the OS build, calicoctl-win, the Calico release in the
/// record, and kubelet and kube-proxy as the node reports them to the cluster.
pub(super) fn versions(
    h: &dyn Host,
    rec: Option<&InstallRecord>,
    ctx: &mut Context,
    node: Option<&crate::k8s_name::NodeName>,
    offline: bool,
) -> anyhow::Result<Versions> {
    let facts = h.system_facts()?;
    let not = |why: &str| NodeInfo::Not(format!("not read: {why}"));
    let node_info = if offline {
        not("--offline")
    } else {
        let read = match (node, ctx.connect_cluster()) {
            (Some(node), Ok(Some(c))) => crate::cluster::node::info(&c, node)
                .map(|i| {
                    i.map_or_else(
                        || NodeInfo::Not(format!("node {node} not found")),
                        |i| NodeInfo::Read(Box::new(i)),
                    )
                })
                .map_err(anyhow::Error::from),
            (_, Ok(None)) => Ok(not("no admin kubeconfig")),
            (None, _) => Ok(not("the configuration names no node")),
            (_, Err(e)) => Err(e.into()),
        };
        read.unwrap_or_else(|e| not(&format!("{e:#}")))
    };
    let v = Versions {
        calicoctl_win: Build {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("CALICOCTL_WIN_COMMIT"),
            build_date: env!("CALICOCTL_WIN_BUILD_DATE"),
        },
        os_build: match facts.ubr {
            Some(ubr) => format!("{}.{ubr}", facts.build),
            None => facts.build.to_string(),
        },
        calico: rec.and_then(|r| r.calico_version.clone()),
        calicoctl_win_that_installed: rec.map(|r| r.tool_version.clone()),
        node_info,
    };
    Ok(v)
}
