//! Reconfigure: what changes between the installed node and a new config, classified as files
//! only (rewrite, restart the services concerned) or as network-immutable (the Calico HNS
//! network must be made again, with the node drained around it), and the plan that does it.

use super::install::DesiredFile;
use crate::apply::Action;
use crate::apply::journal::{Journal, Undo};
use crate::host::{HnsNetwork, Host, ServiceState};
use crate::installed::record::{InstallRecord, NetworkSettings, RecordedFile};
use crate::k8s_name::NodeName;
use crate::layout::{CALICO_NETWORK, EXTERNAL_FILE, EXTERNAL_NETWORK};
use std::time::Duration;

/// Why the existing networks cannot carry the new config; empty when they can.
pub fn network_changes(
    old: Option<&NetworkSettings>,
    new: &NetworkSettings,
    calico: Option<&HnsNetwork>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(old) = old {
        if old.backend != new.backend {
            out.push(format!("backend {} -> {}", old.backend, new.backend));
        }
        if old.vni != new.vni && new.backend == "vxlan" {
            out.push(format!("VXLAN VNI {} -> {}", old.vni, new.vni));
        }
        if old.mac_prefix != new.mac_prefix {
            out.push(format!(
                "VXLAN MAC prefix {} -> {}",
                old.mac_prefix, new.mac_prefix
            ));
        }
        if old.adapter != new.adapter {
            let show = |a: &Option<String>| a.clone().unwrap_or_else(|| "(auto)".into());
            out.push(format!(
                "VXLAN adapter {} -> {}",
                show(&old.adapter),
                show(&new.adapter)
            ));
        }
        if old.single_network != new.single_network {
            out.push(format!(
                "windows_use_single_network {} -> {}",
                old.single_network, new.single_network
            ));
        }
    }
    // What HNS has, whatever the record says: calico-node reuses a network without comparing
    // its VSID, so a VNI changed by an earlier install is still the old one here.
    if let Some(n) = calico {
        let want_type = match new.backend.as_str() {
            "vxlan" => Some("Overlay"),
            "windows-bgp" => Some("L2Bridge"),
            _ => None,
        };
        if let Some(t) = want_type
            && !n.network_type.eq_ignore_ascii_case(t)
            && out.iter().all(|c| !c.starts_with("backend"))
        {
            out.push(format!(
                "the Calico network is {}, the {} backend needs {t}",
                n.network_type, new.backend
            ));
        }
        if new.backend == "vxlan"
            && n.vsid() != Some(new.vni)
            && out.iter().all(|c| !c.starts_with("VXLAN VNI"))
        {
            out.push(format!(
                "the Calico network has VSID {}, the config says VNI {}",
                n.vsid().map_or("none".into(), |v| v.to_string()),
                new.vni
            ));
        }
    }
    out
}

/// Whether install rendered the file (records from before the flag: by its name).
pub fn is_rendered(f: &RecordedFile) -> bool {
    let name = f.path.rsplit('\\').next().unwrap_or_default();
    f.rendered
        || name.eq_ignore_ascii_case(EXTERNAL_FILE)
        || (name.starts_with("calico-") && name.ends_with(".env"))
}

/// The installed files reconfigure keeps as they are (the release's, the credentials): every
/// recorded file that is neither rendered nor the record itself.
pub fn kept_files(rec: &InstallRecord, rendered: &[DesiredFile]) -> Vec<RecordedFile> {
    let record_path = rec.path();
    rec.files
        .iter()
        .filter(|f| !is_rendered(f) && !f.path.eq_ignore_ascii_case(&record_path))
        .filter(|f| {
            !rendered
                .iter()
                .any(|r| r.path.eq_ignore_ascii_case(&f.path))
        })
        .cloned()
        .collect()
}

/// The networks a network-immutable change deletes: Calico, and External too when its
/// adapter or type (the backend) changes.
pub fn networks_to_delete(
    old: Option<&NetworkSettings>,
    new: &NetworkSettings,
    networks: &[HnsNetwork],
) -> Vec<HnsNetwork> {
    let external = old.is_some_and(|o| o.adapter != new.adapter || o.backend != new.backend);
    networks
        .iter()
        .filter(|n| n.name == CALICO_NETWORK || (external && n.name == EXTERNAL_NETWORK))
        .cloned()
        .collect()
}

/// Whether an interrupted run cordoned `node`: its journal holds the undo that uncordons it.
pub fn cordoned_by(journal: Option<&Journal>, node: &NodeName) -> bool {
    journal
        .iter()
        .flat_map(|j| &j.entries)
        .any(|e| matches!(&e.undo, Undo::Uncordon { node: n } if n.as_str().eq_ignore_ascii_case(node.as_str())))
}

/// The cluster steps around a network change.
pub struct NodeSteps {
    pub node: NodeName,
    /// Cordon first (the node is not cordoned yet).
    pub cordon: bool,
    /// Uncordon at the end (this run or an interrupted one cordoned it).
    pub uncordon: bool,
    /// `None` when resuming after the pods are gone and the network made again.
    pub drain: Option<Action>,
    pub ready_timeout: Duration,
    /// How the DaemonSet pods left on the node are evicted once the network is made again.
    pub recreate: crate::cluster::drain::DrainOptions,
}

/// Everything the reconfigure plan is made from.
pub struct Inputs<'a> {
    /// The files and services, planned like an install with the new config.
    pub install: super::install::Inputs<'a>,
    /// The services as installed, in start order (they stop in reverse).
    pub installed_services: Vec<String>,
    /// The networks to delete (the Calico network; External too when its adapter or type
    /// changes).
    pub delete: Vec<HnsNetwork>,
    pub node: Option<NodeSteps>,
}

/// The plan: cordon, drain, stop the services, delete the networks, then the install plan of
/// the new config (files, registrations, start, wait for the network), the node Ready,
/// uncordon. Without networks to delete, only the install plan with its restarts.
pub fn plan(host: &dyn Host, i: &Inputs<'_>) -> anyhow::Result<Vec<Action>> {
    let mut actions = Vec::new();
    if let Some(n) = &i.node {
        if n.cordon {
            actions.push(Action::Cordon {
                node: n.node.clone(),
            });
        }
        actions.extend(n.drain.clone());
    }
    if !i.delete.is_empty() {
        for name in i.installed_services.iter().rev() {
            if host
                .service_query(name)?
                .is_some_and(|s| s.state != ServiceState::Stopped)
            {
                actions.push(Action::StopService { name: name.clone() });
            }
        }
        for n in &i.delete {
            actions.push(Action::DeleteNetwork {
                id: n.id.clone(),
                name: n.name.clone(),
            });
        }
    }
    actions.extend(super::install::plan(host, &i.install)?);
    if let Some(n) = i.node.as_ref().filter(|_| !i.delete.is_empty()) {
        // The drain left them (as `kubectl drain` does) on the network deleted under them.
        actions.push(Action::RecreateDaemonSetPods {
            node: n.node.clone(),
            options: n.recreate,
        });
    }
    if let Some(n) = &i.node {
        if !actions.is_empty() || n.uncordon {
            actions.push(Action::WaitNodeReady {
                node: n.node.clone(),
                timeout: n.ready_timeout,
            });
        }
        if n.uncordon {
            actions.push(Action::Uncordon {
                node: n.node.clone(),
            });
        }
    }
    Ok(actions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::migrate::tests::network;

    /// The VXLAN settings with VNI 4096, changed by `edit`.
    fn settings(edit: fn(&mut NetworkSettings)) -> NetworkSettings {
        let mut s = NetworkSettings {
            backend: "vxlan".into(),
            vni: 4096,
            mac_prefix: "0E-2A".into(),
            adapter: None,
            single_network: false,
        };
        edit(&mut s);
        s
    }

    /// Each setting the networks keep is named once; the VSID in HNS counts even when the
    /// record agrees with the config.
    #[test]
    fn each_network_immutable_change_is_named_once() {
        let vni_4097: fn(&mut NetworkSettings) = |s| s.vni = 4097;
        // The recorded settings, the config's, the Calico network's VSID, what is named.
        type Case = (
            Option<NetworkSettings>,
            NetworkSettings,
            Option<u32>,
            &'static [&'static str],
        );
        let cases: [Case; 5] = [
            (
                Some(settings(|_| {})),
                settings(vni_4097),
                Some(4096),
                &["VXLAN VNI 4096 -> 4097"],
            ),
            (
                Some(settings(vni_4097)),
                settings(vni_4097),
                Some(4096),
                &["the Calico network has VSID 4096, the config says VNI 4097"],
            ),
            (None, settings(vni_4097), Some(4097), &[]),
            (
                Some(settings(|_| {})),
                settings(|s| {
                    s.mac_prefix = "0E-2B".into();
                    s.adapter = Some("Ethernet 2".into());
                    s.single_network = true;
                }),
                None,
                &[
                    "VXLAN MAC prefix 0E-2A -> 0E-2B",
                    "VXLAN adapter (auto) -> Ethernet 2",
                    "windows_use_single_network false -> true",
                ],
            ),
            (
                Some(settings(|_| {})),
                settings(|s| s.backend = "windows-bgp".into()),
                Some(4096),
                &["backend vxlan -> windows-bgp"],
            ),
        ];
        for (old, new, vsid, want) in cases {
            let calico = vsid.map(|v| network("Calico", Some(v)));
            let got = network_changes(old.as_ref(), &new, calico.as_ref());
            assert_eq!(got, want, "{old:?} -> {new:?}, VSID {vsid:?}");
        }
    }

    #[test]
    fn external_goes_too_only_when_its_adapter_or_type_changes() {
        let nets = [network("Calico", Some(4096)), network("External", None)];
        let old = settings(|_| {});
        for (new, want) in [
            (settings(|s| s.vni = 4097), &["Calico"][..]),
            (
                settings(|s| s.adapter = Some("Ethernet 2".into())),
                &["Calico", "External"],
            ),
            (
                settings(|s| s.backend = "windows-bgp".into()),
                &["Calico", "External"],
            ),
        ] {
            let names: Vec<String> = networks_to_delete(Some(&old), &new, &nets)
                .into_iter()
                .map(|n| n.name)
                .collect();
            assert_eq!(names, want, "{new:?}");
        }
    }
}
