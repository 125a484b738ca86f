//! The External vSwitch's adapter's addressing from before the vSwitch: recorded by CalicoNode
//! just before it makes the vSwitch, put back on the vSwitch's host adapter where it differs,
//! and compared by `status`. Creating a vSwitch on a static adapter can leave its host adapter
//! without the DNS servers, or on DHCP or an APIPA address (kubernetes-sigs/sig-windows-tools#162,
//! microsoft/SDN#498, projectcalico/calico#4631, ovn-org/ovn-kubernetes#2530), and `Calico_ep`
//! can take the LAN's interface metric, after which the LAN is lost (projectcalico/calico#4664).
//!
//! The calls exist on Windows Server 2019 (17763) and later: `SetInterfaceDnsSettings` (build
//! 19041 and later) is not used. An address is added with `CreateUnicastIpAddressEntry` and a
//! metric set with `SetIpInterfaceEntry` (netioapi.h, Windows Vista and later: `Network`); DHCP
//! is turned off, and the DNS servers and suffix set, with WMI's
//! `Win32_NetworkAdapterConfiguration` methods (`host::ip_config`), which tell the DHCP and DNS
//! clients, as writing the interface's TCP/IP parameters in the registry does not. What was
//! put back is read back: a change Windows does not report is not done.

use crate::host::ip_config::AdapterSetting;
use crate::host::{Adapter, Host, HostResult, RegValue};
use crate::layout::{ADDRESSING_VALUE, CALICO_KEY};
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
    let json = serde_json::to_string(a).map_err(|e| crate::host::HostError::Refused {
        what: "keep the adapter's addressing".into(),
        reason: e.to_string(),
    })?;
    host.reg_set(CALICO_KEY, ADDRESSING_VALUE, &RegValue::Sz(json))
}

/// What was kept, if anything readable was.
pub fn recorded(host: &dyn Host) -> Option<Addressing> {
    match host.reg_get(CALICO_KEY, ADDRESSING_VALUE).ok()?? {
        RegValue::Sz(json) => serde_json::from_str(&json).ok(),
        _ => None,
    }
}

/// One way the vSwitch's host adapter differs from its adapter before.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    if v.is_empty() {
        "none".into()
    } else {
        v.iter()
            .map(Ipv4Addr::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Drift {
    pub fn describe(&self, before: &Addressing, now: &Adapter) -> String {
        let (was, is) = (&before.adapter, &now.name);
        match self {
            Drift::Dhcp => format!("{was} had static addresses; {is} asks DHCP"),
            Drift::Address(ip, p) => format!("{was} had the static address {ip}/{p}; {is} has not"),
            Drift::Dns { was: w, now: n } => {
                format!(
                    "{was} had the DNS servers {}; {is} has {}",
                    list(w),
                    list(n)
                )
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

/// Puts back on the host adapter what differs, then reads it back; what was done, in words,
/// and what could not be (a change Windows does not report afterwards among them).
pub fn reconcile(
    host: &dyn Host,
    before: &Addressing,
    now: &Adapter,
) -> (Vec<String>, Vec<String>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    let set = |s: AdapterSetting| host.configure_adapter(now.index, &s);
    for d in drift(before, now) {
        let what = d.describe(before, now);
        let out = match &d {
            Drift::Dhcp => set(AdapterSetting::Static(before.addresses.clone())),
            Drift::Address(ip, p) => match host.add_address(now.index, *ip, *p) {
                Err(crate::host::HostError::Exists { .. }) => Ok(()),
                other => other,
            },
            Drift::Dns { was, .. } => set(AdapterSetting::DnsServers(was.clone())),
            Drift::Suffix { was, .. } => set(AdapterSetting::DnsSuffix(was.clone())),
            Drift::Metric { was, .. } => host.set_interface_metric(now.index, *was),
        };
        match out {
            Ok(()) => done.push((d, what)),
            Err(e) => failed.push(format!("could not put back ({what}): {e}")),
        }
    }
    if done.is_empty() {
        return (Vec::new(), failed);
    }
    let back = host
        .adapters()
        .ok()
        .and_then(|all| all.into_iter().find(|a| a.index == now.index));
    let still = back.as_ref().map_or_else(Vec::new, |b| drift(before, b));
    let mut put_back = Vec::new();
    for (d, what) in done {
        match (&back, still.iter().find(|s| same_kind(s, &d))) {
            (Some(b), Some(s)) => failed.push(format!(
                "put back but not read back ({what}): {}",
                s.describe(before, b)
            )),
            (None, _) => failed.push(format!(
                "put back but not read back ({what}): the adapter is not listed any more"
            )),
            (Some(_), None) => put_back.push(format!("put back: {what}")),
        }
    }
    (put_back, failed)
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
mod tests;
