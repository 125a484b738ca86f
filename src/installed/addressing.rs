//! The External vSwitch's adapter's addressing from before the vSwitch, recorded by CalicoNode
//! just before it makes the vSwitch and keyed to that External network's id. Creating a vSwitch
//! on a static adapter can drop its DNS servers or address (kubernetes-sigs/sig-windows-tools#162,
//! microsoft/SDN#498, projectcalico/calico#4631, ovn-org/ovn-kubernetes#2530), and `Calico_ep`
//! can take the LAN's interface metric (projectcalico/calico#4664).
//!
//! Only what the host adapter lacked right after the vSwitch was made (`lost`) is put back,
//! once; a later difference is an administrator's change, never reverted. The record goes with
//! its network. Only calls of Windows Server 2019 (17763; not `SetInterfaceDnsSettings`, 19041):
//! `CreateUnicastIpAddressEntry` and `SetIpInterfaceEntry` (netioapi.h), and WMI's
//! `Win32_NetworkAdapterConfiguration` for DHCP and DNS (`host::ip_config`), which tell the DHCP
//! and DNS clients as registry writes do not. What was put back is read back.

use crate::host::ip_config::AdapterSetting;
use crate::host::{Adapter, HnsNetwork, Host, HostResult};
use crate::layout::{ADDRESSING_VALUE, CALICO_KEY, EXTERNAL_NETWORK};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The adapter's addressing as it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addressing {
    pub adapter: String,
    pub mac: String,
    pub dhcp: bool,
    /// Its stable addresses with their prefix lengths.
    pub addresses: Vec<(Ipv4Addr, u8)>,
    pub dns_servers: Vec<Ipv4Addr>,
    pub dns_suffix: String,
    pub metric: u32,
    /// The id of the External network made right after: the record belongs to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The boot it was taken in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// What the host adapter lacked right after the vSwitch was made (`None`: not compared
    /// yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<Vec<Drift>>,
    /// Of what was lost, what is not put back yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Drift>,
}

impl Addressing {
    pub fn of(a: &Adapter) -> Self {
        Self {
            adapter: a.name.clone(),
            mac: a.mac.clone(),
            dhcp: a.dhcp,
            addresses: a
                .addresses
                .iter()
                .filter(|x| x.preferred && !x.ip.is_link_local() && !x.ip.is_loopback())
                .map(|x| (x.ip, x.prefix_len))
                .collect(),
            dns_servers: a.dns_servers.clone(),
            dns_suffix: a.dns_suffix.clone(),
            metric: a.metric,
            network: None,
            boot: None,
            lost: None,
            pending: Vec::new(),
        }
    }

    /// Taken in this boot.
    pub fn taken_in(mut self, boot: Option<String>) -> Self {
        self.boot = boot;
        self
    }

    /// Whether it belongs to the External network there is now: keyed to its id, or taken in
    /// this boot just before it was made and not keyed yet (a start cut off in between).
    pub fn belongs(&self, networks: &[HnsNetwork], boot: Option<&str>) -> bool {
        let Some(external) = networks.iter().find(|n| n.name == EXTERNAL_NETWORK) else {
            return false;
        };
        match &self.network {
            Some(id) => id.eq_ignore_ascii_case(&external.id),
            None => self.lost.is_none() && boot.is_some() && self.boot.as_deref() == boot,
        }
    }

    /// The vSwitch's host adapter made on this adapter: a vSwitch port with its MAC named
    /// `vEthernet (<adapter>)` (its address may be what went missing).
    pub fn host_adapter<'a>(&self, adapters: &'a [Adapter]) -> Option<&'a Adapter> {
        adapters
            .iter()
            .find(|a| crate::host::uplink::is_host_adapter_of(a, &self.adapter, &self.mac))
    }
}

/// Keeps it (before the vSwitch is made).
pub fn record(host: &dyn Host, a: &Addressing) -> HostResult<()> {
    super::keep_json(host, ADDRESSING_VALUE, a)
}

/// What was kept, if anything readable was.
pub fn recorded(host: &dyn Host) -> Option<Addressing> {
    super::calico_json(host, ADDRESSING_VALUE).ok().flatten()
}

/// What was kept for the External network there is now (`Addressing::belongs`).
pub fn current(host: &dyn Host, networks: &[HnsNetwork]) -> Option<Addressing> {
    let boot = host.system_facts().ok().and_then(|f| f.boot_id);
    recorded(host).filter(|k| k.belongs(networks, boot.as_deref()))
}

/// Keys the record taken just before to the External network just made.
pub fn key_to(host: &dyn Host, network_id: &str) -> HostResult<()> {
    match recorded(host) {
        Some(mut k) if k.network.is_none() => {
            k.network = Some(network_id.to_owned());
            record(host, &k)
        }
        _ => Ok(()),
    }
}

/// Drops the record (its network is gone, or goes).
pub fn forget(host: &dyn Host) -> HostResult<()> {
    host.reg_delete_value(CALICO_KEY, ADDRESSING_VALUE)
}

/// The External vSwitch's host adapter: by the record (`current`), else the vSwitch port
/// whose physical adapter the External network binds (`uplink::uplink_of`), the one holding
/// its management IP where several are; never another adapter.
pub fn external_adapter<'a>(
    kept: Option<&Addressing>,
    adapters: &'a [Adapter],
    networks: &[HnsNetwork],
) -> Option<&'a Adapter> {
    if let Some(a) = kept.and_then(|k| k.host_adapter(adapters)) {
        return Some(a);
    }
    let external = networks.iter().find(|n| n.name == EXTERNAL_NETWORK)?;
    let ports: Vec<&Adapter> = adapters
        .iter()
        .filter(|a| {
            a.is_vswitch_port()
                && crate::host::uplink::uplink_of(a, adapters, Some(external)).is_some()
        })
        .collect();
    let mgmt = external
        .management_ip
        .as_deref()
        .and_then(|ip| ip.parse::<Ipv4Addr>().ok());
    match ports[..] {
        [one] => Some(one),
        // No port told by its uplink (the adapter under it not listed, HNS naming none): the
        // vSwitch port that holds the External network's management IP, HNS's own word.
        [] => adapters
            .iter()
            .find(|a| a.is_vswitch_port() && mgmt.is_some_and(|ip| a.holds(ip))),
        _ => ports
            .into_iter()
            .find(|a| mgmt.is_some_and(|ip| a.holds(ip))),
    }
}

/// One way the vSwitch's host adapter differs from its adapter before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Drift {
    /// A static adapter's host adapter asks DHCP.
    Dhcp,
    /// A static address is missing.
    Address(Ipv4Addr, u8),
    /// A static adapter's DNS servers (or a DHCP adapter's, when the host adapter has none).
    Dns {
        was: Vec<Ipv4Addr>,
        now: Vec<Ipv4Addr>,
    },
    /// A static adapter's DNS suffix.
    Suffix {
        was: String,
        now: String,
    },
    Metric {
        was: u32,
        now: u32,
    },
}

fn list(v: &[Ipv4Addr]) -> String {
    let all: Vec<String> = v.iter().map(Ipv4Addr::to_string).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

impl Drift {
    pub fn describe(&self, before: &Addressing, now: &Adapter) -> String {
        let (was, is) = (&before.adapter, &now.name);
        match self {
            Drift::Dhcp => format!("{was} had static addresses; {is} asks DHCP"),
            Drift::Address(ip, p) => format!("{was} had the static address {ip}/{p}; {is} has not"),
            Drift::Dns { was: w, now: n } => {
                let (w, n) = (list(w), list(n));
                format!("{was} had the DNS servers {w}; {is} has {n}")
            }
            Drift::Suffix { was: w, now: n } => {
                format!("{was} had the DNS suffix {w:?}; {is} has {n:?}")
            }
            Drift::Metric { was: w, now: n } => {
                format!("{was} had the interface metric {w}; {is} has {n}")
            }
        }
    }
}

/// How the host adapter differs from the adapter before. A DHCP adapter's addresses, DNS
/// servers and suffix come from DHCP to the host adapter too: only missing DNS servers count.
pub fn drift(before: &Addressing, now: &Adapter) -> Vec<Drift> {
    let mut out = Vec::new();
    if !before.dhcp {
        if now.dhcp {
            out.push(Drift::Dhcp);
        }
        for (ip, p) in &before.addresses {
            if !now.holds(*ip) {
                out.push(Drift::Address(*ip, *p));
            }
        }
    }
    let dns_lost = now.dns_servers.is_empty() && !before.dns_servers.is_empty();
    if (!before.dhcp && now.dns_servers != before.dns_servers) || dns_lost {
        out.push(Drift::Dns {
            was: before.dns_servers.clone(),
            now: now.dns_servers.clone(),
        });
    }
    if !before.dhcp && now.dns_suffix != before.dns_suffix {
        out.push(Drift::Suffix {
            was: before.dns_suffix.clone(),
            now: now.dns_suffix.clone(),
        });
    }
    if now.metric != before.metric {
        out.push(Drift::Metric {
            was: before.metric,
            now: now.metric,
        });
    }
    out
}

/// The interface's TCP/IP parameters key.
pub fn tcpip_key(guid: &str) -> String {
    format!(r"HKLM\SYSTEM\CurrentControlSet\Services\Tcpip\Parameters\Interfaces\{guid}")
}

/// Of what the vSwitch dropped and is not put back yet, what the host adapter still lacks as
/// the vSwitch left it (the rest was changed since, by someone else).
pub fn as_left(kept: &Addressing, now: &Adapter) -> Vec<Drift> {
    let current = drift(kept, now);
    kept.pending
        .iter()
        .filter(|d| current.contains(d))
        .cloned()
        .collect()
}

/// How the host adapter differs from before beyond what the vSwitch dropped and is still
/// missing: what changed since (an administrator's), which is never put back.
pub fn changed_since(kept: &Addressing, now: &Adapter) -> Vec<Drift> {
    let left = as_left(kept, now);
    drift(kept, now)
        .into_iter()
        .filter(|d| !left.contains(d))
        .collect()
}

/// Right after the vSwitch was made: what its host adapter lacks is what the vSwitch dropped
/// (kept as `lost`, once). Then puts back what of it is not back yet and still as the vSwitch
/// left it; what was done, in words, and what could not be (left for the next start).
pub fn put_back(
    host: &dyn Host,
    kept: &mut Addressing,
    now: &Adapter,
) -> (Vec<String>, Vec<String>) {
    if kept.lost.is_none() {
        let lost = drift(kept, now);
        kept.pending.clone_from(&lost);
        kept.lost = Some(lost);
    }
    kept.pending = as_left(kept, now);
    let todo = kept.pending.clone();
    let (done, failed, back) = reconcile(host, kept, now, &todo);
    kept.pending.retain(|d| !back.contains(d));
    (done, failed)
}

/// Another static address of `ip/p`'s subnet on the adapter: adding `ip` beside it would give
/// the adapter two addresses of one subnet, one of which may be another host's now.
fn static_neighbour(now: &Adapter, ip: Ipv4Addr, p: u8) -> Option<Ipv4Addr> {
    let same = |x: Ipv4Addr| x != ip && !x.is_link_local() && super::routes::same_subnet(x, ip, p);
    let other = now.addresses.iter().find(|x| same(x.ip));
    other.filter(|_| !now.dhcp).map(|x| x.ip)
}

/// Puts `what` back on the host adapter with the setters Windows documents (WMI's
/// `Win32_NetworkAdapterConfiguration`, `host::ip_config`), then reads the adapter back; what
/// was done, in words, what could not be (a change Windows does not report afterwards among
/// them), and which were put back.
fn reconcile(
    host: &dyn Host,
    before: &Addressing,
    now: &Adapter,
    what: &[Drift],
) -> (Vec<String>, Vec<String>, Vec<Drift>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    let set = |s: AdapterSetting| host.configure_adapter(now.index, &s);
    for d in what {
        let said = d.describe(before, now);
        let out = match d {
            Drift::Dhcp => set(AdapterSetting::Static(before.addresses.clone())),
            Drift::Address(ip, p) => match static_neighbour(now, *ip, *p) {
                Some(other) => Err(crate::host::HostError::Refused {
                    what: format!("add {ip}/{p}"),
                    reason: format!(
                        "{} holds the static address {other} of the same subnet",
                        now.name
                    ),
                }),
                None => match host.add_address(now.index, *ip, *p) {
                    Err(crate::host::HostError::Exists { .. }) => Ok(()),
                    other => other,
                },
            },
            Drift::Dns { was, .. } => set(AdapterSetting::DnsServers(was.clone())),
            Drift::Suffix { was, .. } => set(AdapterSetting::DnsSuffix(was.clone())),
            Drift::Metric { was, .. } => host.set_interface_metric(now.index, *was),
        };
        match out {
            Ok(()) => done.push((d.clone(), said)),
            Err(e) => failed.push(format!("could not put back ({said}): {e}")),
        }
    }
    let (put_back, back) = read_back(host, before, now, done, &mut failed);
    (put_back, failed, back)
}

/// What was put back, read back from the adapter: each one Windows reports as done, in
/// words and as drifts; the rest go to `failed`.
fn read_back(
    host: &dyn Host,
    before: &Addressing,
    now: &Adapter,
    done: Vec<(Drift, String)>,
    failed: &mut Vec<String>,
) -> (Vec<String>, Vec<Drift>) {
    if done.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let read = host
        .adapters()
        .ok()
        .and_then(|all| all.into_iter().find(|a| a.index == now.index));
    let still = read.as_ref().map_or_else(Vec::new, |b| drift(before, b));
    let (mut put_back, mut back) = (Vec::new(), Vec::new());
    for (d, what) in done {
        match (&read, still.iter().find(|s| same_kind(s, &d))) {
            (Some(b), Some(s)) => failed.push(format!(
                "put back but not read back ({what}): {}",
                s.describe(before, b)
            )),
            (None, _) => failed.push(format!(
                "put back but not read back ({what}): the adapter is not listed any more"
            )),
            (Some(_), None) => {
                put_back.push(format!("put back: {what}"));
                back.push(d);
            }
        }
    }
    (put_back, back)
}

/// Whether two drifts are of the same fact (an address by its address).
fn same_kind(a: &Drift, b: &Drift) -> bool {
    match (a, b) {
        (Drift::Address(x, _), Drift::Address(y, _)) => x == y,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The name HNS gives the host's adapter on the Calico network (`Calico_ep`'s).
const CALICO_EP_ADAPTER: &str = "vEthernet (Calico_ep)";

/// `Calico_ep`'s adapter when its interface metric is not above the LAN's host adapter's:
/// Windows may then send the LAN's traffic into the pod network (projectcalico/calico#4664).
pub fn ep_metric_clash<'a>(adapters: &'a [Adapter], lan: &Adapter) -> Option<&'a Adapter> {
    adapters
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(CALICO_EP_ADAPTER))
        .filter(|ep| ep.metric <= lan.metric)
}

/// How far above the LAN's metric `Calico_ep`'s is put.
pub const EP_METRIC_ABOVE: u32 = 100;

#[cfg(test)]
#[path = "addressing_tests.rs"]
pub(crate) mod tests;
