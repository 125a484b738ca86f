//! The node's health as one value. `survey` gathers the node's facts once and judges each
//! (`health::judge`, docs/findings.md); its `NodeReport` is what `status -o json` prints, and
//! `text` what status prints for people. The same survey is the node's own look (`Mode::Own`:
//! no config, no admin kubeconfig), read by CalicoNode, repair and `verify` (`OwnView`).

pub mod api_group;
mod cluster_facts;
mod hns_facts;
mod host_facts;
pub mod judge;
mod look;
mod metrics_facts;
pub mod metrics_findings;
mod node_look;
mod report;
pub mod sections;
mod seen;
pub mod text;
mod token;
mod under_way;

pub use look::{Admin, Desired, Look, Mode, Own};
pub use node_look::OwnView;
pub use report::{InstalledReport, NodeReport, NotInstalledReport};
pub use seen::{Seen, see};

use crate::health::judge::Finding;
use crate::installed::endpoints;
use crate::installed::record::InstallRecord;
use crate::k8s_name::NodeName;
use crate::layout::{CALICO_NETWORK, InstallRoot, Role};
use look::Notes;

/// The node surveyed once: each fact gathered and judged, in the order status shows them. The
/// node's own look (`Mode::Own`) takes the same steps and leaves out those it cannot take.
pub fn survey(look: Look<'_>) -> anyhow::Result<NodeReport> {
    let mut n = Notes {
        lenient: look.admin().is_none(),
        ..Notes::default()
    };
    let under_way = node_look::under_way(&look, &mut n)?;
    let read = crate::installed::record::read(look.host, look.root).map_err(anyhow::Error::from);
    let rec = n.unread(read, "the install record")?.flatten();
    let desired = match (look.admin(), &rec) {
        (Some(a), Some(rec)) => Some((a.desired)(rec)?),
        (Some(_), None) => return Ok(not_installed(look.root, n, under_way)),
        // The node's own look goes on without a record (a CalicoNode started before install
        // writes it): Felix and the Calico network. Without the config it wants nothing.
        (None, _) => None,
    };
    let mut r = report::InstalledReport {
        installed: rec.is_some(),
        install_root: look.root.as_str().to_owned(),
        calico_version: rec.as_ref().and_then(|r| r.calico_version.clone()),
        backend: rec.as_ref().map(|r| r.backend.clone()),
        under_way,
        ..Default::default()
    };
    n.shown.node = look.node.to_string();
    steps(&look, (rec.as_ref(), desired), &mut r, &mut n)?;
    r.problems = n.problems();
    r.healthy = r.problems.is_empty();
    r.findings = n.findings;
    r.shown = n.shown;
    Ok(NodeReport::Installed(Box::new(r)))
}

/// The survey's steps, in status's order, each filling its section of `r`.
fn steps(
    look: &Look<'_>,
    (rec, desired): (Option<&InstallRecord>, Option<Desired>),
    r: &mut InstalledReport,
    n: &mut Notes,
) -> anyhow::Result<()> {
    let (h, admin) = (look.host, look.admin());
    r.services = host_facts::services(h, &recorded_services(look, rec), desired.as_ref(), n)?;
    host_facts::metadata_route(h, rec, n)?;
    let recorded = rec.map_or_else(|| vec![CALICO_NETWORK.to_owned()], |r| r.networks.clone());
    r.networks = hns_facts::networks(h, &recorded, n)?;
    r.endpoints = hns_facts::endpoints(h, &look.endpoints(), n)?;
    r.hns_restart = hns_facts::hns_restart(h, n);
    // The node's own look has no config: which files it renders is not known to it.
    if let Some(d) = desired {
        host_facts::file_drift(&d.files, n);
        r.drift = d.files;
    }
    r.felix_health = host_facts::felix_health(h, look.root, n)?;
    // The VNI the config wants: status's alone.
    if let Some(a) = admin {
        r.vni = Some(hns_facts::vni(a.config, &r.networks, &a.seen.cluster, n));
    }
    let addresses = node_look::addresses(look, &mut r.own, n);
    r.address = hns_facts::address(h, &r.networks, addresses, look.node, n);
    r.addressing = hns_facts::addressing(h, n);
    // The Node's state and pods, IPAM, calico-node's token, kube-proxy and the directories the
    // config names: status's alone (the cluster as the admin kubeconfig reads it, the config).
    if let Some(a) = admin {
        let cluster = &a.seen.cluster;
        r.node = cluster_facts::node(cluster, look.node, n)?;
        r.ipam = cluster_facts::ipam(cluster, a.config, look.node, n)?;
        r.token = token::token(h, a.config, cluster, a.seen.asked.as_ref(), n);
        let version = match cluster {
            crate::cluster::read::ClusterRead::Read(_, f) => f.kube_proxy_version(),
            _ => None,
        };
        r.kube_proxy = Some(host_facts::kube_proxy(h, a.config, version, n));
        let calico = rec.and_then(|r| r.calico_version.as_deref());
        r.known_issues = Some(host_facts::known_issues(h, a.config, calico));
        r.dir_access = host_facts::dir_access(h, a.config, n);
    }
    metrics_facts::metrics(h, n);
    if let Some(a) = admin {
        metrics_facts::unscraped(h, a.config, &a.seen.cluster, n);
    }
    // Admin kubeconfigs left on the node and the datastore's API group: status's alone (an
    // access review with each kubeconfig found, the cluster's locks).
    if let (Some(a), Some(rec)) = (admin, rec) {
        let cluster = &a.seen.cluster;
        r.admin_kubeconfigs = cluster_facts::admin_kubeconfigs(a.env, h, cluster, n);
        r.calico_api = cluster_facts::datastore_migration(h, (rec, look.root), cluster, n);
    }
    Ok(())
}

/// The services the install recorded, each with its record. The node's own look leaves out
/// CalicoNode (the look is its own, or runs right after it started), and takes Felix alone
/// without a record.
fn recorded_services<'r>(
    look: &Look<'_>,
    rec: Option<&'r InstallRecord>,
) -> Vec<(String, Option<&'r crate::host::ServiceSpec>)> {
    let Some(rec) = rec else {
        return vec![(Role::Felix.service_name().to_owned(), None)];
    };
    rec.services
        .iter()
        .filter(|s| look.admin().is_some() || s.name != Role::Node.service_name())
        .map(|s| (s.name.clone(), Some(s)))
        .collect()
}

/// This node's own look without the cluster, as CalicoNode's minute look judges it (faults
/// not aged by it): what `verify` joins to its report on the node it verifies. None when
/// Calico is not installed here.
pub fn installed_on_node(
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    node: &NodeName,
    state_dir: Option<&std::path::Path>,
) -> anyhow::Result<Vec<Finding>> {
    if crate::installed::record::read(host, root)?.is_none() {
        return Ok(Vec::new());
    }
    Ok(OwnView::of(survey(own_look(host, root, node, state_dir))).findings)
}

/// The node's own look without the cluster, reading the faults' ages.
fn own_look<'a>(
    host: &'a dyn crate::host::Host,
    root: &'a InstallRoot,
    node: &'a NodeName,
    state_dir: Option<&'a std::path::Path>,
) -> Look<'a> {
    let own = Own {
        cluster: None,
        remote: endpoints::Remote::Skip,
        ageing: endpoints::Ageing::Read,
    };
    Look {
        host,
        root,
        node,
        grace: endpoints::DEFAULT_GRACE,
        state_dir,
        mode: Mode::Own(own),
    }
}

/// No install record: what is under way, or that Calico is not installed.
fn not_installed(
    root: &InstallRoot,
    mut n: Notes,
    under_way: Option<sections::UnderWay>,
) -> NodeReport {
    if n.findings.is_empty() {
        n.findings
            .push(crate::health::judge::not_installed(root.as_str()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::judge::Code;
    use crate::host::sim::SimHost;
    use crate::host::{Access, Files as _};

    /// The node's own look makes a finding of an install record it cannot read and goes on
    /// (Felix, the Calico network), where it once took the record for none and said nothing.
    #[test]
    fn an_unreadable_record_is_a_finding_of_the_nodes_own_look() {
        let host = SimHost::in_memory("ws2022").expect("host");
        let root = InstallRoot::new(r"C:\CalicoWindows");
        host.write_file(&root.record(), b"{not json", Access::Normal)
            .expect("record");
        let node = "win-1".into();
        let view = OwnView::of(survey(own_look(&host, &root, &node, None)));
        let said: Vec<_> = view.findings.iter().map(|f| (f.code, &f.message)).collect();
        let found = |code: Code, said: &str| {
            let of = |f: &&Finding| f.code == code && f.message.contains(said);
            view.findings.iter().any(|f| of(&f))
        };
        assert!(found(Code::HostUnreadable, "install record"), "{said:?}");
        // The look went on: Felix, which the look takes alone without a record, is judged.
        assert!(found(Code::ServiceNotRunning, "CalicoFelix"), "{said:?}");
    }
}
