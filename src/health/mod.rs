//! The node's health as one value. `survey` gathers the node's facts once and judges each with
//! its judge (`installed::health`, docs/findings.md); the `NodeReport` it returns is what
//! `status -o json` prints, and `text` what status prints for people. `on_node` is the part of
//! the survey a node makes of itself without the config or an admin kubeconfig, by the same
//! steps and judges: CalicoNode's minute look (its `CalicoWindowsReady` condition and the codes
//! beside it) and repair's look after its run. What this room needs from the rooms above it
//! (the config's desired services and the files' drift, from `plan/`; how the cluster is
//! read, from the command) is handed in; the survey asks calico-node's token (`see`), who
//! holds the host lock and what a detached run left itself.

mod cluster_facts;
mod hns_facts;
mod host_facts;
mod look;
mod metrics_facts;
mod node_look;
mod report;
pub mod sections;
mod seen;
pub mod text;
mod token;
mod under_way;

pub use look::{Desired, Look};
pub use node_look::{OnNode, installed_on_node, on_node};
pub use report::{InstalledReport, NodeReport, NotInstalledReport};
pub use seen::{Seen, see};

use crate::cluster::read::ClusterRead;
use crate::layout::InstallRoot;
use look::Notes;

/// The node surveyed once: each fact gathered and judged, in the order status shows them.
pub fn survey(look: Look<'_>) -> anyhow::Result<NodeReport> {
    let mut n = Notes::default();
    let busy = look.state_dir.and_then(crate::host::lock::busy);
    let under_way = under_way::under_way(look.host, look.root, look.state_dir, busy, &mut n)?;
    let Some(rec) = crate::installed::record::read(look.host, look.root)? else {
        return Ok(not_installed(look.root, n, under_way));
    };
    let desired = (look.desired)(&rec)?;
    let rec = &rec;
    let (h, config, node) = (look.host, look.config, look.node);
    let (cluster, asked) = (&look.seen.cluster, look.seen.asked.as_ref());
    n.shown.node = node.to_owned();
    let services = host_facts::services(h, rec, &desired, &mut n)?;
    host_facts::metadata_route(h, rec, &mut n)?;
    let networks = hns_facts::networks(h, &rec.networks, &mut n)?;
    let how = crate::installed::endpoints::Survey {
        cluster: match cluster {
            ClusterRead::Read(c, _) => Some(c.as_ref()),
            _ => None,
        },
        node,
        grace: look.grace,
        remote: crate::installed::endpoints::Remote::Ask,
        ageing: crate::installed::endpoints::Ageing::Read,
    };
    let judged = hns_facts::endpoints(h, &how, &mut n)?;
    let hns_restart = hns_facts::hns_restart(h, &mut n);
    host_facts::file_drift(&desired.files, &mut n);
    // Status's look is not lenient: a Felix it cannot ask is its end.
    let felix = host_facts::felix_health(h, look.root, &mut n)?
        .ok_or_else(|| anyhow::anyhow!("Felix's health cannot be asked"))?;
    let vni = hns_facts::vni(config, &networks, cluster, &mut n);
    let addresses = match cluster {
        ClusterRead::Read(_, f) => (f.node_internal_ip, f.node_bgp_ipv4),
        _ => (None, None),
    };
    let address = hns_facts::address(h, &networks, addresses, node, &mut n);
    let addressing = hns_facts::addressing(h, &mut n);
    let node_doc = cluster_facts::node(cluster, node, &mut n)?;
    let ipam = cluster_facts::ipam(cluster, config, node, &mut n)?;
    let token = token::token(h, config, cluster, asked, &mut n);
    let kube_proxy = host_facts::kube_proxy(h, config, &mut n);
    let dir_access = host_facts::dir_access(h, config, &mut n);
    metrics_facts::metrics(h, &mut n);
    let admins = cluster_facts::admin_kubeconfigs(look.env, h, cluster, &mut n);
    let calico_api = cluster_facts::datastore_migration(h, (rec, look.root), cluster, &mut n);
    let problems = n.problems();
    Ok(NodeReport::Installed(Box::new(InstalledReport {
        installed: true,
        install_root: look.root.as_str().to_owned(),
        calico_version: rec.calico_version.clone(),
        backend: rec.backend.clone(),
        services,
        networks,
        endpoints: judged,
        hns_restart,
        felix_health: felix,
        vni,
        address,
        addressing,
        drift: desired.files,
        node: node_doc,
        ipam,
        token,
        kube_proxy,
        dir_access,
        admin_kubeconfigs: admins,
        under_way,
        calico_api,
        healthy: problems.is_empty(),
        problems,
        findings: n.findings,
        shown: n.shown,
    })))
}

/// No install record: what is under way, or that Calico is not installed.
fn not_installed(
    root: &InstallRoot,
    mut n: Notes,
    under_way: Option<sections::UnderWay>,
) -> NodeReport {
    if n.findings.is_empty() {
        n.findings
            .push(crate::installed::health::not_installed(root.as_str()));
    }
    NodeReport::NotInstalled(NotInstalledReport {
        installed: false,
        install_root: root.as_str().to_owned(),
        healthy: false,
        under_way,
        problems: n.problems(),
        findings: n.findings,
    })
}
