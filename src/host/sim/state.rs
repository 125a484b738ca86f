//! The simulated host's state, as JSON in `<dir>/state.json` (files under `<dir>/fs/`).

use crate::host::{
    Adapter, AdapterAddress, EventLevel, FirewallRule, HostError, InterfaceAddress, Recovery,
    RegValue, Route, ServiceState, StartType, SystemFacts, VSWITCH_ADAPTER_DESCRIPTION,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub profile: String,
    pub system: SystemFacts,
    /// Registry keys (lower case) → value names (lower case) → values.
    pub registry: BTreeMap<String, BTreeMap<String, RegValue>>,
    /// Services by lower-case name.
    pub services: BTreeMap<String, SimService>,
    /// HNS networks as HCN documents (with their `ID`).
    pub networks: Vec<serde_json::Value>,
    pub endpoints: Vec<crate::host::HnsEndpoint>,
    /// HNS's policy lists as v1 documents (kube-proxy's load balancers), as a test puts them.
    #[serde(default)]
    pub policy_lists: Vec<serde_json::Value>,
    /// Lower-case paths of files written as secrets.
    pub secrets: BTreeSet<String>,
    /// Owners and access lists set on paths (lower case, `\`-separated), in SDDL; a path
    /// without one inherits from its parent, and the drive root has Windows' default.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security: BTreeMap<String, String>,
    pub interfaces: Vec<InterfaceAddress>,
    /// What `GetAdaptersAddresses` says of each adapter besides `interfaces`' addresses
    /// (`stored`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapters: Vec<Adapter>,
    pub routes: Vec<Route>,
    /// Running processes by lower-case image name.
    pub processes: BTreeMap<String, u32>,
    /// Firewall rules by lower-case name: the first of each name.
    pub firewall: BTreeMap<String, FirewallRule>,
    /// The other rules of a name `firewall` holds, in the order added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub firewall_more: Vec<FirewallRule>,
    pub settings: SimSettings,
    /// While the vSwitch exists: the NIC's own interface index and the vEthernet's.
    #[serde(default)]
    pub vswitch: Option<(u32, u32)>,
    /// Every program started on the host, in order (tests: what a binary was asked to do).
    #[serde(default)]
    pub started: Vec<String>,
    /// The Application event log: what was reported, in order (history, as `started`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<SimEvent>,
}

/// An adapter as `Network::adapters` answers: its addresses are `interfaces`' on its index,
/// Preferred but for those the stored adapter lists (they are tentative: duplicate address
/// detection not done, or a duplicate).
fn with_addresses(a: &Adapter, interfaces: &[InterfaceAddress]) -> Adapter {
    let tentative = |ip| a.addresses.iter().any(|x| x.ip == ip && !x.preferred);
    Adapter {
        addresses: interfaces
            .iter()
            .filter(|i| i.index == a.index)
            .map(|i| AdapterAddress {
                ip: i.ip,
                prefix_len: i.prefix_len,
                preferred: !tentative(i.ip),
            })
            .collect(),
        guid: if a.guid.is_empty() {
            format!("{{5eb1a7e0-0000-4000-8000-{:012x}}}", a.index)
        } else {
            a.guid.clone()
        },
        ..a.clone()
    }
}

/// An adapter as the state keeps it: of its addresses only the tentative ones.
pub fn stored(a: &Adapter) -> Adapter {
    Adapter {
        addresses: a
            .addresses
            .iter()
            .filter(|x| !x.preferred)
            .cloned()
            .collect(),
        ..a.clone()
    }
}

/// One event written to the simulated Application event log.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SimEvent {
    pub source: String,
    pub level: EventLevel,
    pub id: u32,
    pub message: String,
    /// The log it is in: `Application` (what `ReportEventW` writes to) or `System`.
    pub channel: String,
    /// When, in seconds since 1970.
    pub time: i64,
    /// The text of its binary data (the Service Control Manager's key name of a service).
    pub binary: Option<String>,
}

impl SimEvent {
    /// An event of `channel` written now, without binary data.
    pub fn now(channel: &str, source: &str, level: EventLevel, id: u32, message: &str) -> Self {
        let (source, message, channel) = (source.into(), message.into(), channel.into());
        let time = crate::duration::now();
        Self {
            source,
            level,
            id,
            message,
            channel,
            time,
            binary: None,
        }
    }
}

/// How the simulation behaves, and its counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SimSettings {
    /// False without the Containers feature: every HNS call fails.
    pub hns_available: bool,
    /// The IPAM block calico-node startup gets for this node.
    pub pod_block: String,
    pub next_pid: u32,
    pub next_id: u64,
    /// While true, HNS reports no management IP on any network.
    #[serde(default)]
    pub management_ip_pending: bool,
    /// While true, reading a firewall rule fails as under Wine (E_NOTIMPL).
    #[serde(default)]
    pub firewall_unreadable: bool,
    /// What `GET /globals/version` answers; `None` as under Wine.
    #[serde(default)]
    pub hns_version: Option<(u32, u32)>,
    #[serde(default)]
    pub firewall_modify_state: crate::host::FirewallModifyState,
    /// What Felix's health endpoint answers while CalicoFelix runs.
    #[serde(default)]
    pub felix_health: SimFelixHealth,
    /// Whether kube-proxy takes its Node as eligible (kubernetes
    /// `pkg/proxy/healthcheck/proxy_health.go` `NodeEligible`).
    #[serde(default)]
    pub kube_proxy_node_ineligible: bool,
    /// While true, a vSwitch leaves a static adapter on DHCP, APIPA (projectcalico/calico#4631).
    #[serde(default)]
    pub vswitch_takes_dhcp: bool,
    /// While true, HNS reports a management IP only once the vSwitch's host adapter holds a
    /// non-APIPA address (calico v3.32.1 `calico.psm1` `Wait-ForManagementIP` waits for it).
    #[serde(default)]
    pub management_ip_needs_stable_address: bool,
    /// Other programs listening on IPv4 TCP ports, by port: their pid, as
    /// `GetExtendedTcpTable` names it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_listeners: BTreeMap<u16, u32>,
    /// TCP port ranges (first, last) the system reserves: a bind in one is WSAEACCES.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_tcp_ports: Vec<(u16, u16)>,
    /// While true, a program started here can be neither looked at nor stopped.
    #[serde(default)]
    pub children_unstoppable: bool,
    /// While set, a program started from now on outlives anything done to it for this many
    /// milliseconds (TerminateProcess waits for pending I/O).
    #[serde(default)]
    pub children_linger_ms: Option<u64>,
    /// The simulated programs still there, by pid: their start and end (Unix ms).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lingering: BTreeMap<u32, (u64, i64)>,
    /// Services (lower case) whose stop control the SCM could not deliver (1053).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stop_undelivered: BTreeMap<String, Undelivered>,
}

/// A stop the SCM could not deliver: each send blocks `takes_ms`, then is refused (Microsoft,
/// "ControlService", Remarks); the first `first` sends, or every one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undelivered {
    /// How many sends are refused; `None`: every one.
    pub first: Option<u32>,
    pub takes_ms: u64,
    /// How many sends were refused so far.
    pub refused: u32,
    /// Each refused send's control is taken once the busy handler is free: the service stops
    /// after the refusal.
    #[serde(default)]
    pub taken_late: bool,
}

/// How the simulated Felix's health endpoint answers (libcalico-go lib/health/health.go).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SimFelixHealth {
    /// Live and ready: 200 with the reporters' table.
    #[default]
    Ready,
    /// Live, not ready: `/readiness` answers 503.
    NotReady,
    /// Nothing listens (health not enabled, or Felix not serving yet).
    Silent,
}

impl SimSettings {
    pub fn next_pid(&mut self) -> u32 {
        self.next_pid += 4;
        self.next_pid
    }

    /// A GUID-shaped id, deterministic so that test output is stable.
    pub fn next_guid(&mut self) -> String {
        self.next_id += 1;
        format!("5eb1a7e0-0000-4000-8000-{:012x}", self.next_id)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimService {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub command_line: String,
    pub start: StartType,
    pub dependencies: Vec<String>,
    pub recovery: Option<Recovery>,
    pub state: ServiceState,
    pub pid: Option<u32>,
    /// Unix seconds when it started (the machine's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// How long its body takes to stop after the stop control; `None`: at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_takes_ms: Option<u64>,
    /// While StopPending: when (Unix milliseconds) it reaches Stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_ms: Option<i64>,
}

/// The machine's clock in Unix milliseconds.
pub fn unix_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl SimService {
    /// Its state now: a stop that was pending has finished once its time came.
    pub fn settle(&mut self) {
        if self.state == ServiceState::StopPending
            && self.stopped_at_ms.is_some_and(|t| unix_now_ms() >= t)
        {
            self.stop_now();
        }
    }

    /// Stopped: no process, no start time, no stop pending.
    pub fn stop_now(&mut self) {
        self.state = ServiceState::Stopped;
        self.pid = None;
        self.since = None;
        self.stopped_at_ms = None;
    }
}

pub fn key_of(key: &str) -> String {
    key.trim_end_matches('\\').to_ascii_lowercase()
}

impl State {
    /// Every firewall rule of this name (any case): the first, then the others in order.
    pub fn rules_named(&self, name: &str) -> Vec<FirewallRule> {
        let first = self.firewall.get(&name.to_ascii_lowercase());
        first
            .into_iter()
            .chain(
                self.firewall_more
                    .iter()
                    .filter(|r| r.name.eq_ignore_ascii_case(name)),
            )
            .cloned()
            .collect()
    }

    pub fn reg_set(&mut self, key: &str, name: &str, value: RegValue) {
        let key = key_of(key);
        // Creating a key creates its parents, as RegCreateKeyEx does.
        let mut parent = key.as_str();
        while let Some((p, _)) = parent.rsplit_once('\\') {
            self.registry.entry(p.to_owned()).or_default();
            parent = p;
        }
        self.registry
            .entry(key)
            .or_default()
            .insert(name.to_ascii_lowercase(), value);
    }

    pub fn network_index(&self, id: &str) -> Option<usize> {
        self.networks.iter().position(|n| {
            n.get("ID")
                .and_then(|v| v.as_str())
                .is_some_and(|v| v.eq_ignore_ascii_case(id))
        })
    }

    /// Every adapter: the described ones, and a plain one for an index only `interfaces`
    /// names. Registry TCP/IP values change nothing here; `configure_adapter` does.
    pub fn all_adapters(&self) -> Vec<Adapter> {
        let mut out: Vec<Adapter> = self
            .adapters
            .iter()
            .map(|a| with_addresses(a, &self.interfaces))
            .collect();
        for i in &self.interfaces {
            if !out.iter().any(|a| a.index == i.index) {
                out.push(with_addresses(&self.default_adapter(i), &self.interfaces));
            }
        }
        out
    }

    /// The adapters `GetAdaptersAddresses(AF_INET)` lists: all but the one the vSwitch binds.
    pub fn ipv4_adapters(&self) -> Vec<Adapter> {
        let bound = self.vswitch.map(|(nic, _)| nic);
        self.all_adapters()
            .into_iter()
            .filter(|a| Some(a.index) != bound)
            .collect()
    }

    /// Every Ethernet interface, IPv4 bound or not, as `GetIfTable2` lists it: the adapters
    /// with a MAC.
    pub fn ethernet_interfaces(&self) -> Vec<Adapter> {
        self.all_adapters()
            .into_iter()
            .filter(|a| !a.mac.is_empty())
            .map(|a| Adapter {
                addresses: Vec::new(),
                dhcp: false,
                gateways: Vec::new(),
                dns_servers: Vec::new(),
                dns_suffix: String::new(),
                metric: 0,
                ..a
            })
            .collect()
    }

    /// The adapter of an interface index, described from now on; an unknown index is
    /// `NotFound` (ERROR_NOT_FOUND).
    pub fn described_adapter(&mut self, index: u32) -> Result<&mut Adapter, HostError> {
        let at = match self.adapters.iter().position(|a| a.index == index) {
            Some(at) => at,
            None => {
                let i = self
                    .interfaces
                    .iter()
                    .find(|i| i.index == index)
                    .ok_or_else(|| HostError::not_found(format!("interface {index}")))?;
                let d = self.default_adapter(i);
                self.adapters.push(d);
                self.adapters.len() - 1
            }
        };
        Ok(&mut self.adapters[at])
    }

    fn default_adapter(&self, i: &InterfaceAddress) -> Adapter {
        let gateways = self
            .routes
            .iter()
            .filter(|r| r.interface_index == i.index && r.prefix_len == 0)
            .map(|r| r.next_hop)
            .collect();
        let nic = Adapter {
            gateways,
            ..Adapter::hyperv_nic(&i.interface, i.index)
        };
        if i.ip.is_loopback() {
            Adapter {
                description: "Software Loopback Interface 1".into(),
                mac: String::new(),
                dhcp: false,
                metric: 75,
                ..nic
            }
        } else {
            nic
        }
    }

    /// The adapter HNS binds the vSwitch to: the one named (`NetAdapterName`), else the
    /// default route's (rancher/rke2#3533).
    fn uplink(&self, named: Option<&str>) -> Result<Adapter, HostError> {
        let all = self.all_adapters();
        let found = match named {
            Some(n) => all.iter().find(|a| a.name.eq_ignore_ascii_case(n)),
            None => crate::host::uplink::default_route_adapter(&all, &self.routes),
        };
        let what = format!(
            "network adapter {}",
            named.unwrap_or("of the default route")
        );
        let a = found.ok_or_else(|| HostError::not_found(what))?;
        if a.is_vswitch_port() {
            return Err(HostError::refused(
                "create the vSwitch",
                format!("{} is another vSwitch's host adapter", a.name),
            ));
        }
        Ok(self
            .adapters
            .iter()
            .find(|d| d.index == a.index)
            .cloned()
            .unwrap_or_else(|| stored(a)))
    }

    /// Creating the first non-NAT network makes the vSwitch: the uplink's addresses and routes
    /// move to `vEthernet (<uplink>)` with its MAC; /32 link-local routes are lost.
    pub fn create_vswitch(&mut self, named: Option<&str>) -> Result<(), HostError> {
        let uplink = self.uplink(named)?;
        let old = uplink.index;
        let new = self
            .interfaces
            .iter()
            .map(|a| a.index)
            .chain(self.adapters.iter().map(|a| a.index))
            .max()
            .unwrap_or(0)
            + 1;
        let name = format!("vEthernet ({})", uplink.name);
        self.move_interface(old, new, Some(&name));
        if !self.adapters.iter().any(|a| a.index == old) {
            self.adapters.push(uplink.clone());
        }
        // A static adapter's DNS does not come over (microsoft/SDN#498); with
        // `vswitch_takes_dhcp` neither does its address (projectcalico/calico#4631).
        let mut vnic = Adapter {
            name,
            index: new,
            description: VSWITCH_ADAPTER_DESCRIPTION.into(),
            guid: String::new(),
            ..uplink.clone()
        };
        if !uplink.dhcp {
            vnic.dns_servers.clear();
            vnic.dns_suffix.clear();
            if self.settings.vswitch_takes_dhcp {
                vnic.dhcp = true;
                for a in self.interfaces.iter_mut().filter(|a| a.index == new) {
                    a.ip = Ipv4Addr::new(169, 254, 7, 9);
                    a.prefix_len = 16;
                }
            }
        }
        self.adapters.push(vnic);
        self.vswitch = Some((old, new));
        self.routes
            .retain(|r| !(r.destination.is_link_local() && r.prefix_len == 32));
        Ok(())
    }

    /// Interface `from`'s addresses (renamed `name`) and routes, moved to interface `to`.
    fn move_interface(&mut self, from: u32, to: u32, name: Option<&str>) {
        for a in self.interfaces.iter_mut().filter(|a| a.index == from) {
            a.index = to;
            if let Some(n) = name {
                a.interface = n.to_owned();
            }
        }
        for r in self.routes.iter_mut().filter(|r| r.interface_index == from) {
            r.interface_index = to;
        }
    }

    /// Deleting the last network removes the vSwitch: the address and the NIC's routes
    /// return to the NIC; /32 link-local routes added on the vEthernet are lost.
    pub fn remove_vswitch(&mut self) {
        let Some((old, new)) = self.vswitch.take() else {
            return;
        };
        let nic = self
            .adapters
            .iter()
            .find(|a| a.index == old)
            .map(|a| a.name.clone());
        self.adapters.retain(|a| a.index != new);
        self.routes.retain(|r| {
            !(r.interface_index == new && r.destination.is_link_local() && r.prefix_len == 32)
        });
        self.move_interface(new, old, nic.as_deref());
    }

    /// The vSwitch's host adapter's address: the provider address HNS gives the networks.
    pub fn vswitch_ip(&self) -> Option<String> {
        let (_, new) = self.vswitch?;
        // HNS latches an APIPA address when the host adapter has no other (AgentBaker 6e2dbb2a24).
        self.vswitch_stable_ip().or_else(|| {
            let i = self.interfaces.iter().find(|i| i.index == new)?;
            Some(i.ip.to_string())
        })
    }

    /// The vSwitch's host adapter's address that is not 169.254/16, if it holds one.
    pub fn vswitch_stable_ip(&self) -> Option<String> {
        let (_, new) = self.vswitch?;
        self.interfaces
            .iter()
            .find(|i| i.index == new && !i.ip.is_link_local())
            .map(|i| i.ip.to_string())
    }

    /// The host's address on the vSwitch: the first non-loopback IPv4 address.
    pub fn primary_ip(&self) -> Option<String> {
        self.interfaces
            .iter()
            .find(|i| !i.ip.is_loopback() && !i.ip.is_link_local())
            .map(|i| i.ip.to_string())
    }
}
