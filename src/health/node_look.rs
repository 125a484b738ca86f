//! What differs in the node's own look (`Mode::Own`: no config, no admin kubeconfig): what a
//! run left under way, the Node read with calico-node's credential, and its report's view.

use super::judge::{self, Finding};
use super::look::{Look, Mode, Notes};
use super::report::NodeReport;
use super::sections::{NodeRead, UnderWay};
use crate::cluster::read::ClusterRead;
use std::net::Ipv4Addr;

/// What the node's own look tells the condition, repair and `verify`: a view of its report.
#[derive(Default)]
pub struct OwnView {
    /// What is wrong, in the order the survey finds it (empty when nothing is).
    pub findings: Vec<Finding>,
    /// The Node's InternalIP, when it was read.
    pub internal_ip: Option<Ipv4Addr>,
    /// The API server refused the read of the Node (401).
    pub refused: bool,
    /// The Node's `CalicoWindowsReady` status as read (`Some(true)`: True).
    pub calico_ready: Option<bool>,
    /// Said with their code and fix but no problem of the node (status shows them beside its
    /// sections): a refused review of `/diags`, Felix's leftover metrics rule.
    pub advice: Vec<Finding>,
}

impl OwnView {
    /// The view of the node's own survey. A survey that failed (a lenient look makes a
    /// finding of each read that fails, so none should) is one finding that says so: this
    /// look always says something.
    pub fn of(surveyed: anyhow::Result<NodeReport>) -> Self {
        let r = match surveyed {
            Ok(NodeReport::Installed(r)) => *r,
            Ok(NodeReport::NotInstalled(r)) => {
                return Self {
                    findings: r.findings,
                    ..Self::default()
                };
            }
            Err(e) => {
                return Self {
                    findings: vec![judge::host_unreadable("the node", format!("{e:#}"))],
                    ..Self::default()
                };
            }
        };
        Self {
            findings: r.findings,
            internal_ip: r.address.internal_ip,
            refused: r.own.refused,
            calico_ready: r.own.calico_ready,
            advice: [r.shown.diags_review, r.shown.felix_rule]
                .into_iter()
                .flatten()
                .collect(),
        }
    }
}

/// What a run left under way, the host lock looked at once (a second look could find another
/// holder). Status says the command holding it; the node's own look leaves it out (no fault).
pub(super) fn under_way(look: &Look<'_>, n: &mut Notes) -> anyhow::Result<Option<UnderWay>> {
    let busy = look.state_dir.and_then(crate::host::lock::busy);
    if busy.is_some() && look.admin().is_none() {
        return Ok(None);
    }
    let found = super::under_way::under_way(look.host, look.root, look.state_dir, busy, n);
    Ok(n.unread(found, "the runs under way")?.flatten())
}

/// The Node's InternalIP and the Calico Node's BGP address: as status's cluster read found
/// them (`see`), or read now with calico-node's credential in the node's own look, which
/// keeps the Node's `CalicoWindowsReady` status in `own` (a read that fails is a finding).
pub(super) fn addresses(
    look: &Look<'_>,
    own: &mut NodeRead,
    n: &mut Notes,
) -> (Option<Ipv4Addr>, Option<Ipv4Addr>) {
    let cluster = match &look.mode {
        Mode::Status(a) => match &a.seen.cluster {
            ClusterRead::Read(_, f) => return (f.node_internal_ip, f.node_bgp_ipv4),
            _ => return (None, None),
        },
        Mode::Own(o) => o.cluster,
    };
    let Some(c) = cluster else {
        return (None, None);
    };
    match crate::cluster::node::view(c, look.node) {
        Ok((read, status)) => {
            own.calico_ready = status;
            read
        }
        Err(e) => {
            own.refused = matches!(e, crate::cluster::ClusterError::Api { code: 401, .. });
            n.findings.push(judge::cluster_unreadable(
                look.node.as_str(),
                format!("the Node's addresses cannot be read: {e}"),
            ));
            (None, None)
        }
    }
}
