//! The judge of the node's address in each layer that must agree: the Node's InternalIP, the
//! Calico Node's BGP address, the HNS networks' management IP.

use super::finding::{Code, Finding};
use crate::host::{Adapter, HnsNetwork};
use crate::k8s_name::NodeName;
use crate::layout::{CALICO_NETWORK, EXTERNAL_NETWORK};
use std::net::Ipv4Addr;

/// The management IP of the networks install makes (External, Calico), by name.
pub fn management_ips(networks: &[HnsNetwork]) -> Vec<(&str, Option<Ipv4Addr>)> {
    networks
        .iter()
        .filter(|n| n.name == CALICO_NETWORK || n.name == EXTERNAL_NETWORK)
        .map(|n| {
            let ip = n.management_ip.as_deref().and_then(|m| m.parse().ok());
            (n.name.as_str(), ip)
        })
        .collect()
}

/// One address everywhere: the BGP address and the HNS networks' management IP must be the
/// Node's InternalIP (or, without one, the BGP address). Felix sends VXLAN to the BGP address
/// (projectcalico/calico v3.31.0 `felix/calc/vxlan_resolver.go`) and the CNI plugin stamps the
/// management IP as provider address (`dataplane_windows.go`). Each layer that differs is one
/// finding; `adapters` (when read) name the adapter that holds the address in its fix.
pub fn node_address(
    node: &NodeName,
    (internal, bgp): (Option<Ipv4Addr>, Option<Ipv4Addr>),
    networks: &[(&str, Option<Ipv4Addr>)],
    adapters: Option<&[Adapter]>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some((truth, named)) = internal
        .map(|ip| (ip, "the Node's InternalIP"))
        .or(bgp.map(|ip| (ip, "the Calico Node's BGP address")))
    else {
        return out;
    };
    if let Some(b) = bgp.filter(|b| *b != truth) {
        out.push(
            Finding::new(
                Code::AddressMismatch,
                node,
                format!(
                    "the Calico Node's BGP address (projectcalico.org/IPv4Address) is {b}, {named} is {truth}: other nodes send this node's VXLAN traffic to {b}"
                ),
                "restart CalicoNode ('Restart-Service CalicoNode -Force'): calico-node's start-up sets the address again from the Node's InternalIP (kubernetes-internal-ip), or set node.ip to the right one",
            ),
        );
    }
    for (name, ip) in networks {
        if let Some(m) = ip.filter(|m| *m != truth) {
            out.push(
                Finding::new(
                    Code::AddressMismatch,
                    *name,
                    format!(
                        "the HNS network {name} has management IP {m}, {named} is {truth}: the vSwitch is bound to another adapter, and pods' endpoints carry {m} as their provider address"
                    ),
                    adapter_remedy(truth, named, adapters),
                ),
            );
        }
    }
    out
}

/// What moves the networks to the adapter that holds `truth`: that adapter named, or, when no
/// adapter of this host holds it, that the address itself is wrong for this node.
fn adapter_remedy(truth: Ipv4Addr, named: &str, adapters: Option<&[Adapter]>) -> String {
    let again = "then 'calicoctl-win reconfigure --drain' makes the networks again";
    let Some(adapters) = adapters else {
        return format!(
            "find the adapter that holds {truth} (Get-NetIPAddress -IPAddress {truth}) and set vxlan.adapter to it, {again}; if none does, {named} is not this node's address"
        );
    };
    let holders: Vec<&str> = adapters
        .iter()
        .filter(|a| a.holds(truth))
        .map(|a| a.name.as_str())
        .collect();
    match holders.as_slice() {
        [] => format!(
            "no adapter of this host holds {truth}: {named} is not this node's address (a NAT address, or one the node no longer has); give the Node its real address (kubelet's --node-ip, or node.ip), or give an adapter {truth}, {again}"
        ),
        [one] => format!("set vxlan.adapter to {one} (it holds {truth}), {again}"),
        several => format!(
            "{truth} is held by several adapters ({}): leave it on one, set vxlan.adapter to that one, {again}",
            several.join(", ")
        ),
    }
}
