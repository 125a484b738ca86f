//! IP configuration: interfaces, routes, adapters, and the trait that reads and changes them.

use super::error::HostResult;
use super::http_probe;
use super::ip_config;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::time::Duration;

/// An IPv4 address on an interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceAddress {
    pub interface: String,
    pub index: u32,
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
}

/// An IPv4 route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub destination: Ipv4Addr,
    pub prefix_len: u8,
    pub next_hop: Ipv4Addr,
    pub interface_index: u32,
    pub metric: u32,
}

impl InterfaceAddress {
    pub fn new(interface: &str, index: u32, ip: Ipv4Addr, prefix_len: u8) -> Self {
        let interface = interface.to_owned();
        Self {
            interface,
            index,
            ip,
            prefix_len,
        }
    }
}

impl Route {
    /// `route 169.254.169.254/32 via 10.0.0.1 on interface 5`: the route as an error names it.
    pub fn describe(&self) -> String {
        format!(
            "route {}/{} via {} on interface {}",
            self.destination, self.prefix_len, self.next_hop, self.interface_index
        )
    }
}

/// A network adapter as `GetAdaptersAddresses` describes it (`IP_ADAPTER_ADDRESSES_LH`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Adapter {
    /// `FriendlyName`: `Ethernet`, `vEthernet (Ethernet)`.
    pub name: String,
    pub index: u32,
    /// `Description`, the driver's name (`Hyper-V Virtual Ethernet Adapter` for a vSwitch's).
    pub description: String,
    /// `PhysicalAddress`, written `00-15-5D-01-02-03` as `Get-NetAdapter` shows it.
    pub mac: String,
    /// The simulated host's state keeps only the tentative ones here (`sim::state::stored`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<AdapterAddress>,
    /// `IP_ADAPTER_DHCP_ENABLED` in `Flags`.
    pub dhcp: bool,
    /// `FirstGatewayAddress` (asked for with `GAA_FLAG_INCLUDE_GATEWAYS`).
    pub gateways: Vec<Ipv4Addr>,
    /// `FirstDnsServerAddress`.
    pub dns_servers: Vec<Ipv4Addr>,
    /// `DnsSuffix`.
    pub dns_suffix: String,
    /// `Ipv4Metric`: the interface metric.
    pub metric: u32,
    /// `AdapterName`, the interface's GUID: its key under `...\Tcpip\Parameters\Interfaces`.
    #[serde(default)]
    pub guid: String,
}

/// One IPv4 address of an adapter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterAddress {
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
    /// `DadState` is `IpDadStatePreferred`: the address is in use, not tentative.
    pub preferred: bool,
}

/// The description Windows gives a vSwitch's host (vEthernet) adapter.
pub const VSWITCH_ADAPTER_DESCRIPTION: &str = "Hyper-V Virtual Ethernet Adapter";

impl Adapter {
    /// A vSwitch's host adapter (`Hyper-V Virtual Ethernet Adapter`, maybe with ` #2`).
    pub fn is_vswitch_port(&self) -> bool {
        self.description.starts_with(VSWITCH_ADAPTER_DESCRIPTION)
    }

    /// Whether it holds exactly this address (never by text: 10.0.0.1 is not 10.0.0.15).
    pub fn holds(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| a.ip == ip)
    }

    /// A Preferred address that is neither loopback nor link-local (169.254/16, APIPA).
    pub fn stable_address(&self) -> Option<&AdapterAddress> {
        self.addresses
            .iter()
            .find(|a| a.preferred && !a.ip.is_link_local() && !a.ip.is_loopback())
    }

    /// A Hyper-V NIC on DHCP, metric 15, its MAC from its index: the simulated host's start.
    pub fn hyperv_nic(name: &str, index: u32) -> Self {
        Self {
            name: name.into(),
            index,
            description: "Microsoft Hyper-V Network Adapter".into(),
            mac: format!("00-15-5D-00-00-{:02X}", index & 0xff),
            addresses: Vec::new(),
            dhcp: true,
            gateways: Vec::new(),
            dns_servers: Vec::new(),
            dns_suffix: String::new(),
            metric: 15,
            guid: String::new(),
        }
    }

    /// A Hyper-V NIC with this MAC and these Preferred /24 addresses: tests' start.
    #[cfg(test)]
    pub fn for_test(name: &str, index: u32, mac: &str, ips: &[&str]) -> Self {
        let address = |ip: &&str| AdapterAddress {
            ip: ip.parse().unwrap_or(Ipv4Addr::UNSPECIFIED),
            prefix_len: 24,
            preferred: true,
        };
        Self {
            mac: mac.into(),
            addresses: ips.iter().map(address).collect(),
            guid: format!("{{00000000-0000-0000-0000-{index:012}}}"),
            ..Self::hyperv_nic(name, index)
        }
    }
}

/// IP configuration.
pub trait Network {
    fn ipv4_addresses(&self) -> HostResult<Vec<InterfaceAddress>>;
    /// Every adapter with IPv4 enabled, with its IPv4 configuration:
    /// `GetAdaptersAddresses(AF_INET)`. A vSwitch's physical adapter is not among them.
    fn adapters(&self) -> HostResult<Vec<Adapter>>;
    /// Every Ethernet interface, IPv4 bound or not (`GetIfTable2`, filter modules left out),
    /// without addresses or IPv4 settings.
    fn ethernet_interfaces(&self) -> HostResult<Vec<Adapter>>;
    /// Sets an interface's IPv4 metric, automatic metric off (`SetIpInterfaceEntry`).
    fn set_interface_metric(&self, index: u32, metric: u32) -> HostResult<()>;
    /// Adds a manual IPv4 address (`CreateUnicastIpAddressEntry`); one already there is `Exists`.
    fn add_address(&self, index: u32, ip: Ipv4Addr, prefix_len: u8) -> HostResult<()>;
    /// Makes an IPv4 setting through WMI's `Win32_NetworkAdapterConfiguration`
    /// (`ip_config::AdapterSetting`); an interface no instance has is `NotFound`.
    fn configure_adapter(&self, index: u32, setting: &ip_config::AdapterSetting) -> HostResult<()>;

    fn routes(&self) -> HostResult<Vec<Route>>;
    /// Adds a route; an identical existing route is refused with `Exists`.
    fn add_route(&self, route: &Route) -> HostResult<()>;
    /// `GET path` from `127.0.0.1:port` within `timeout`; `None` when nothing listens.
    fn local_http_get(
        &self,
        port: u16,
        path: &str,
        timeout: Duration,
    ) -> HostResult<Option<http_probe::Answer>>;
}

/// Calls an API that fills a buffer and answers "too small, this many bytes" (`overflow`),
/// growing it up to `attempts` times (as `GetAdaptersAddresses` is documented to be called).
pub fn with_growing_buffer(
    mut size: u32,
    attempts: u32,
    overflow: u32,
    mut call: impl FnMut(&mut [u64], &mut u32) -> u32,
) -> Result<Vec<u64>, u32> {
    let mut last = overflow;
    for _ in 0..attempts {
        let mut buf = vec![0u64; (size as usize).div_ceil(8)];
        last = call(&mut buf, &mut size);
        match last {
            0 => return Ok(buf),
            code if code == overflow => continue,
            code => return Err(code),
        }
    }
    Err(last)
}

#[cfg(test)]
mod growing_buffer_tests {
    #[test]
    fn a_buffer_still_too_small_after_the_last_attempt_is_an_error_not_an_empty_answer() {
        const OVERFLOW: u32 = 111; // ERROR_BUFFER_OVERFLOW
        let mut calls = 0;
        let r = super::with_growing_buffer(16, 4, OVERFLOW, |_, size| {
            calls += 1;
            *size *= 2;
            OVERFLOW
        });
        assert_eq!((r, calls), (Err(OVERFLOW), 4));
        // Grown once, then filled.
        let r = super::with_growing_buffer(16, 4, OVERFLOW, |buf, size| {
            if buf.len() * 8 < 64 {
                *size = 64;
                return OVERFLOW;
            }
            buf[0] = 7;
            0
        });
        assert_eq!(r.map(|b| (b.len(), b[0])), Ok((8, 7)));
        assert_eq!(
            super::with_growing_buffer(16, 4, OVERFLOW, |_, _| 5),
            Err(5)
        );
    }
}
