//! The node as the cluster holds it: Ready and cordoned, its pods, its IPAM blocks, the API
//! group Calico's resources are read through, and admin kubeconfigs left on the node.

use super::judge;
use super::look::Notes;
use super::sections::{CalicoApi, Ipam, NodeState};
use crate::cluster::drain;
use crate::cluster::read::ClusterRead;
use crate::config::Config;
use crate::host::Host;
use crate::installed::record::InstallRecord;
use crate::k8s_name::NodeName;
use crate::layout::InstallRoot;
use std::collections::BTreeMap;

/// The node in the cluster: Ready, cordoned, its pods.
pub(super) fn node(
    cluster: &ClusterRead,
    node_name: &NodeName,
    n: &mut Notes,
) -> anyhow::Result<Option<NodeState>> {
    let (c, f) = match cluster {
        ClusterRead::Read(c, f) => (c, f),
        ClusterRead::Skipped(why) => {
            n.shown.node_not_read = Some((*why).to_owned());
            return Ok(None);
        }
        ClusterRead::Failed(e) => {
            n.findings.push(judge::cluster_unreadable(
                "cluster",
                format!("the cluster cannot be read: {e}"),
            ));
            return Ok(None);
        }
    };
    // The Node as this look read it, once (`facts::gather`).
    let (ready, cordoned) = match f.node_object.as_ref() {
        Some(node) => (
            drain::not_ready(node).map_or(Ok(()), Err),
            drain::unschedulable(node),
        ),
        None => (
            Err(format!("there is no Node named {node_name} in the cluster")),
            false,
        ),
    };
    // The pods not read is a problem of the report, not its end.
    let pods: Vec<String> = match drain::pods_on(c, node_name) {
        Ok(list) => list
            .iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or_default(),
                    p.metadata.name.as_deref().unwrap_or_default()
                )
            })
            .collect(),
        Err(e @ crate::cluster::ClusterError::Timeout { .. }) => return Err(e.into()),
        Err(e) => {
            n.findings.push(judge::cluster_unreadable(
                node_name.as_str(),
                format!("the pods on node {node_name} cannot be read: {e}"),
            ));
            Vec::new()
        }
    };
    n.findings
        .extend(judge::node_state(node_name, &ready, cordoned));
    Ok(Some(NodeState {
        name: node_name.to_string(),
        ready: ready.is_ok(),
        cordoned,
        pods,
    }))
}

/// The node's IPAM blocks: the pod addresses in use of what they hold, against kubelet's
/// maxPods (`null` without the cluster).
pub(super) fn ipam(
    cluster: &ClusterRead,
    config: &Config,
    node_name: &NodeName,
    n: &mut Notes,
) -> anyhow::Result<Option<Ipam>> {
    use crate::cluster::ipam;
    let ClusterRead::Read(c, facts) = cluster else {
        return Ok(None);
    };
    let blocks = ipam::node_blocks(c, node_name)?;
    let capacity: u64 = blocks.iter().map(|b| b.capacity).sum();
    let pods: u64 = blocks.iter().map(|b| b.pods).sum();
    let max_pods = facts.node_max_pods;
    if config.windows_use_single_network && !blocks.is_empty() {
        n.findings
            .extend(judge::ipam_capacity(node_name, max_pods, capacity, pods));
    }
    Ok(Some(Ipam {
        blocks,
        pods,
        capacity,
        max_pods,
    }))
}

/// The group Calico's resources are read through and the one this node's components read,
/// judged against the locks (`health::api_group`); a datastore migration under way said as a
/// phase, not a problem (its components pause and keep the data plane, as preflight's
/// `datastore-migration` says); one that cannot be read, said.
pub(super) fn datastore_migration(
    h: &dyn Host,
    (rec, root): (&InstallRecord, &InstallRoot),
    cluster: &ClusterRead,
    n: &mut Notes,
) -> Option<CalicoApi> {
    let ClusterRead::Read(_, f) = cluster else {
        return None;
    };
    let pin = crate::health::api_group::pinned(h, root);
    let release = rec
        .calico_version
        .as_deref()
        .and_then(|v| crate::release::version::CalicoVersion::parse(v).ok());
    let components = crate::health::api_group::read_by_components(&f.calico_locks, pin);
    let group = crate::health::api_group::judge(&f.calico_locks, pin, release.as_ref());
    n.findings.extend(group);
    let state = f.datastore_state();
    n.shown.datastore = state.as_ref().map(|s| s.sentence.clone());
    n.shown.datastore_unreadable = f
        .datastore_migration_unreadable
        .as_deref()
        .map(judge::datastore_unreadable);
    Some(CalicoApi {
        group: f.calico_api,
        datastore_ready: f.datastore_ready,
        locks: f.calico_locks,
        components_read: components,
        components_pinned: pin,
        migration: f.datastore_migration.clone(),
        migration_under_way: state.is_some_and(|s| s.under_way),
        migration_unreadable: f.datastore_migration_unreadable.clone(),
    })
}

/// Where kubeconfigs are left on a node: the node-join scripts' `C:\k\config`, the file
/// `$KUBECONFIG` names, and where the provisioning examples put the installer's.
const KUBECONFIG_PLACES: &[&str] = &[r"C:\k\config", r"C:\calicoctl-win\installer.kubeconfig"];

/// Each kubeconfig in the usual places on the node whose identity may do anything in the
/// cluster (an access review of `*` on `*`), when status reads the cluster: a node should keep
/// no such credential.
pub(super) fn admin_kubeconfigs(
    env: &BTreeMap<String, String>,
    h: &dyn Host,
    cluster: &ClusterRead,
    n: &mut Notes,
) -> Vec<String> {
    if !matches!(cluster, ClusterRead::Read(..)) {
        return Vec::new();
    }
    let mut places: Vec<String> = KUBECONFIG_PLACES.iter().map(|p| (*p).to_owned()).collect();
    places.extend(env.get("KUBECONFIG").filter(|k| !k.is_empty()).cloned());
    let mut found = Vec::new();
    for path in places {
        let Ok(Some(bytes)) = h.read_file(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let admin = crate::cluster::Cluster::connect_text(&path, &text, env, false).and_then(|c| {
            crate::cluster::facts::can_i(&c, &crate::cluster::facts::Permission::anything())
        });
        if let Ok(true) = admin {
            n.findings.push(judge::admin_kubeconfig(&path));
            found.push(path);
        }
    }
    found
}
