//! The adapter the External network's vSwitch binds (its uplink), chosen by the node's IP:
//! HNS binds the default-route adapter otherwise (rancher/rke2#3533,
//! projectcalico/calico#10536). Addresses compare as addresses, never as text.
//!
//! Behind the vSwitch the uplink is read back from the External network, or from the one
//! adapter with the host adapter's MAC and name (antrea `pkg/agent/util/net_windows.go`,
//! `adapterIPExists`); when neither tells, it is unknown (`None`): no change.

use super::{Adapter, Route, hns::HnsNetwork};
use serde::Serialize;
use std::net::Ipv4Addr;

/// The node's IP and where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeIp {
    pub ip: Ipv4Addr,
    /// `the Node's InternalIP`, `kubelet's --node-ip` ...
    pub source: String,
}

/// The adapter chosen and why, as `config show`, `render` and the install plan say it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// The adapter's name; `None` when nothing names one (HNS picks).
    pub adapter: Option<String>,
    pub why: String,
}

impl Choice {
    pub fn describe(&self) -> String {
        match &self.adapter {
            Some(a) => format!("the External network binds {a}: {}", self.why),
            None => format!(
                "the External network binds the adapter HNS picks: {}",
                self.why
            ),
        }
    }

    /// With no adapter chosen (not told, or none named), the recorded one stays: no change.
    pub fn or_recorded(self, recorded: Option<&str>) -> Choice {
        match (&self.adapter, recorded) {
            (None, Some(kept)) => Choice {
                adapter: Some(kept.to_owned()),
                why: format!("the install record's adapter, kept: {}", self.why),
            },
            _ => self,
        }
    }
}

/// No adapter can be chosen for certain.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("vxlan.adapter is {name}, and this host has no adapter of that name (it has {list})")]
    Missing { name: String, list: String },
    #[error("{ip} ({from}) is held by several adapters: {list}")]
    Several {
        ip: Ipv4Addr,
        from: String,
        list: String,
    },
    #[error("no adapter holds {ip} ({from}); the adapters hold {list}")]
    NoneHolds {
        ip: Ipv4Addr,
        from: String,
        list: String,
    },
    #[error(
        "{adapter}{} is the host adapter of a vSwitch calicoctl-win did not make{} (no External network is on it): HNS cannot bind another vSwitch to it", holding(*.ip, .from), switch_named(.adapter)
    )]
    Foreign {
        adapter: String,
        ip: Ipv4Addr,
        from: String,
    },
}

impl ChoiceError {
    /// What to do about it.
    pub fn remedy(&self) -> &'static str {
        match self {
            Self::Missing { .. } => {
                "set vxlan.adapter to an adapter of this host (Get-NetAdapter lists them), or unset it to bind the adapter that holds the node IP"
            }
            Self::Foreign { .. } => {
                "bind the node IP to a physical adapter (remove the other vSwitch, or move the address), or set vxlan.adapter to a physical adapter that holds it"
            }
            _ => {
                "set vxlan.adapter to the physical adapter that holds the node IP (Get-NetAdapter lists them)"
            }
        }
    }
}

/// `, the vSwitch X`: the X of a host adapter's `vEthernet (X)`: a `New-VMSwitch` switch's
/// name, or the bound adapter's for one HNS made.
fn switch_named(adapter: &str) -> String {
    adapter
        .strip_prefix("vEthernet (")
        .and_then(|r| r.strip_suffix(')'))
        .map_or(String::new(), |x| {
            format!(" (the vSwitch {x}, or the one bound to {x})")
        })
}

/// ` holds 10.0.0.5 (the Node's InternalIP) but`, when the address is known.
fn holding(ip: Ipv4Addr, from: &str) -> String {
    if ip.is_unspecified() {
        String::new()
    } else {
        format!(" holds {ip} ({from}) but")
    }
}

fn listed(adapters: &[Adapter]) -> String {
    let shown: Vec<String> = adapters
        .iter()
        .filter(|a| !a.addresses.iter().all(|x| x.ip.is_loopback()) || a.addresses.is_empty())
        .map(|a| {
            let ips: Vec<String> = a.addresses.iter().map(|x| x.ip.to_string()).collect();
            if ips.is_empty() {
                format!("{} (no IPv4 address)", a.name)
            } else {
                format!("{} ({})", a.name, ips.join(", "))
            }
        })
        .collect();
    if shown.is_empty() {
        "none".into()
    } else {
        shown.join("; ")
    }
}

/// Every adapter Windows lists: IPv4 enabled, and Ethernet with IPv4 unbound (under a vSwitch).
pub fn every_adapter(host: &dyn super::Host) -> super::HostResult<Vec<Adapter>> {
    let mut all = host.adapters()?;
    let unbound: Vec<Adapter> = host
        .ethernet_interfaces()?
        .into_iter()
        .filter(|i| !all.iter().any(|a| a.index == i.index))
        .collect();
    all.extend(unbound);
    Ok(all)
}

/// Whether `vnic` is the vSwitch host adapter of adapter `name` with MAC `mac`: by MAC and the
/// `vEthernet (<name>)` name together (antrea `adapterIPExists`); no MAC is no match.
pub fn is_host_adapter_of(vnic: &Adapter, name: &str, mac: &str) -> bool {
    vnic.is_vswitch_port()
        && !mac.is_empty()
        && vnic.mac.eq_ignore_ascii_case(mac)
        && vnic
            .name
            .eq_ignore_ascii_case(&format!("vEthernet ({name})"))
}

/// The physical adapter under the External vSwitch's host adapter; `None` if not ours or untold.
pub fn uplink_of(
    vnic: &Adapter,
    adapters: &[Adapter],
    external: Option<&HnsNetwork>,
) -> Option<String> {
    external?;
    let same_mac = |a: &&Adapter| {
        !a.is_vswitch_port() && !vnic.mac.is_empty() && a.mac.eq_ignore_ascii_case(&vnic.mac)
    };
    // What HNS says it bound (`NetAdapterName`): the adapter of that name with the vEthernet
    // adapter's MAC, or HNS's word alone when Windows lists none of that name.
    if let Some(bound) = external.and_then(|n| n.adapter.as_deref()) {
        let mut named = adapters
            .iter()
            .filter(|a| !a.is_vswitch_port() && a.name.eq_ignore_ascii_case(bound))
            .peekable();
        if named.peek().is_none() {
            return Some(bound.to_owned());
        }
        if let Some(a) = named.find(same_mac) {
            return Some(a.name.clone());
        }
    }
    let mut candidates = adapters
        .iter()
        .filter(same_mac)
        .filter(|a| is_host_adapter_of(vnic, &a.name, &a.mac));
    let one = candidates.next()?;
    candidates.next().is_none().then(|| one.name.clone())
}

/// The adapter the default route with the lowest route-plus-interface metric leaves by.
pub fn default_route_adapter<'a>(adapters: &'a [Adapter], routes: &[Route]) -> Option<&'a Adapter> {
    routes
        .iter()
        .filter(|r| r.prefix_len == 0 && r.destination.is_unspecified())
        .filter_map(|r| {
            let a = adapters.iter().find(|a| a.index == r.interface_index)?;
            Some((r.metric.saturating_add(a.metric), a))
        })
        .min_by_key(|(m, _)| *m)
        .map(|(_, a)| a)
}

/// Chooses the uplink: configured, else holding the node IP, else the default route's.
pub fn choose(
    configured: Option<&str>,
    node_ip: Option<&NodeIp>,
    adapters: &[Adapter],
    routes: &[Route],
    external: Option<&HnsNetwork>,
) -> Result<Choice, ChoiceError> {
    if let Some(name) = configured {
        return by_name(name, adapters, external);
    }
    let Some(node) = node_ip else {
        return Ok(by_default_route(adapters, routes, external));
    };
    let holders: Vec<&Adapter> = adapters.iter().filter(|a| a.holds(node.ip)).collect();
    let holder = match holders.as_slice() {
        [one] => *one,
        [] => {
            return Err(ChoiceError::NoneHolds {
                ip: node.ip,
                from: node.source.clone(),
                list: listed(adapters),
            });
        }
        several => {
            return Err(ChoiceError::Several {
                ip: node.ip,
                from: node.source.clone(),
                list: several
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    };
    if !holder.is_vswitch_port() {
        return Ok(Choice {
            adapter: Some(holder.name.clone()),
            why: format!("it holds {} ({})", node.ip, node.source),
        });
    }
    through_vswitch(holder, adapters, external, Some(node)).map(|uplink| Choice {
        why: match &uplink {
            Some(_) => format!(
                "it holds {} ({}) through the External vSwitch's host adapter {}",
                node.ip, node.source, holder.name
            ),
            None => format!(
                "{} ({}) is on {}, {}",
                node.ip, node.source, holder.name, UNTOLD
            ),
        },
        adapter: uplink,
    })
}

/// The adapter `vxlan.adapter` names, read back through our vSwitch when it names its port.
fn by_name(
    name: &str,
    adapters: &[Adapter],
    external: Option<&HnsNetwork>,
) -> Result<Choice, ChoiceError> {
    match adapters.iter().find(|a| a.name.eq_ignore_ascii_case(name)) {
        Some(a) if !a.is_vswitch_port() => Ok(Choice {
            adapter: Some(a.name.clone()),
            why: "vxlan.adapter names it".into(),
        }),
        Some(vnic) => through_vswitch(vnic, adapters, external, None).map(|uplink| Choice {
            why: match &uplink {
                Some(_) => format!(
                    "vxlan.adapter names {}, the External vSwitch's host adapter on it",
                    vnic.name
                ),
                None => format!("vxlan.adapter names {}, {}", vnic.name, UNTOLD),
            },
            adapter: uplink,
        }),
        None => Err(ChoiceError::Missing {
            name: name.to_owned(),
            list: listed(adapters),
        }),
    }
}

/// Why a choice through our vSwitch is unknown: an unknown is no change (`NetworkSettings`).
const UNTOLD: &str = "the External vSwitch's host adapter, whose physical adapter neither HNS nor Windows tells: the External network stays on the adapter it is bound to";

/// The physical adapter under our vSwitch port `vnic` (`None`: untold); another's is `Foreign`,
/// said with the node IP it holds when that is known.
fn through_vswitch(
    vnic: &Adapter,
    adapters: &[Adapter],
    external: Option<&HnsNetwork>,
    node: Option<&NodeIp>,
) -> Result<Option<String>, ChoiceError> {
    if external.is_none() {
        return Err(ChoiceError::Foreign {
            adapter: vnic.name.clone(),
            ip: node.map_or(Ipv4Addr::UNSPECIFIED, |n| n.ip),
            from: node.map(|n| n.source.clone()).unwrap_or_default(),
        });
    }
    Ok(uplink_of(vnic, adapters, external))
}

fn by_default_route(
    adapters: &[Adapter],
    routes: &[Route],
    external: Option<&HnsNetwork>,
) -> Choice {
    let why = "no node IP is known, and it carries the default route";
    match default_route_adapter(adapters, routes) {
        Some(a) if !a.is_vswitch_port() => Choice {
            adapter: Some(a.name.clone()),
            why: why.into(),
        },
        Some(vnic) => match uplink_of(vnic, adapters, external) {
            Some(a) => Choice {
                adapter: Some(a),
                why: format!(
                    "{why} through the External vSwitch's host adapter {}",
                    vnic.name
                ),
            },
            None => Choice {
                adapter: None,
                why: format!(
                    "no node IP is known, and the default route leaves by {}, a vSwitch's host adapter whose physical adapter cannot be told",
                    vnic.name
                ),
            },
        },
        None => Choice {
            adapter: None,
            why: "no node IP is known and no default route".into(),
        },
    }
}

#[cfg(test)]
#[path = "uplink_tests.rs"]
mod tests;

impl crate::error::Diagnose for ChoiceError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        crate::error::Diagnosis::new(
            crate::error::Exit::Preflight,
            crate::error::Kind::AdapterChoice,
            self.remedy(),
        )
    }
}

/// Where kubeadm keeps kubelet's flags on a Windows node (`KUBELET_KUBEADM_ARGS="..."`,
/// which kubelet's service reads: kubernetes-sigs/sig-windows-tools `PrepareNode.ps1`).
pub const KUBEADM_FLAGS: &str = r"C:\var\lib\kubelet\kubeadm-flags.env";

/// The IPv4 address of `--node-ip=A[,B]` or `--node-ip A` among kubelet's arguments.
pub fn node_ip_flag(args: &[String]) -> Option<Ipv4Addr> {
    super::flag(args, "node-ip")?
        .split(',')
        .find_map(|v| v.trim().trim_matches('"').parse().ok())
}

/// The node IP: the Node's InternalIP, else kubelet's `--node-ip`, else kubeadm's flags file.
pub fn node_ip(
    internal_ip: Option<Ipv4Addr>,
    kubelet_command_line: Option<&str>,
    kubeadm_flags: Option<&str>,
) -> Option<NodeIp> {
    if let Some(ip) = internal_ip {
        return Some(NodeIp {
            ip,
            source: "the Node's InternalIP".into(),
        });
    }
    if let Some(line) = kubelet_command_line {
        let (_, args) = super::split_command_line(line);
        if let Some(ip) = node_ip_flag(&args) {
            return Some(NodeIp {
                ip,
                source: "kubelet's --node-ip".into(),
            });
        }
    }
    let text = kubeadm_flags?;
    let args = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("KUBELET_KUBEADM_ARGS="))?
        .trim()
        .trim_matches('"');
    let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
    node_ip_flag(&args).map(|ip| NodeIp {
        ip,
        source: format!("--node-ip in {KUBEADM_FLAGS}"),
    })
}
