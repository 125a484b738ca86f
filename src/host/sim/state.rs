//! The simulated host's state, kept as JSON in `<dir>/state.json` (file contents live under
//! `<dir>/fs/`).

use crate::host::{
    FirewallRule, InterfaceAddress, Recovery, RegValue, Route, ServiceState, StartType, SystemFacts,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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
    pub endpoints: Vec<SimEndpoint>,
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
    pub routes: Vec<Route>,
    /// Running processes by lower-case image name.
    pub processes: BTreeMap<String, u32>,
    /// Firewall rules by lower-case name.
    pub firewall: BTreeMap<String, FirewallRule>,
    pub settings: SimSettings,
    /// While the vSwitch exists: the NIC's own interface index and the vEthernet's.
    #[serde(default)]
    pub vswitch: Option<(u32, u32)>,
    /// The command line of every program started on the host, in order (for tests: what a
    /// release's binary was asked to do).
    #[serde(default)]
    pub started: Vec<String>,
    /// The Application event log: what was reported, in order (history, as `started`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<SimEvent>,
}

/// One event written to the simulated Application event log.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SimEvent {
    pub source: String,
    pub level: crate::host::EventLevel,
    pub id: u32,
    pub message: String,
    /// The log it is in: `Application` (what `ReportEventW` writes to) unless said.
    #[serde(default = "application", skip_serializing_if = "is_application")]
    pub channel: String,
    /// When, in seconds since 1970 (0: not recorded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub time: i64,
    /// The text of its binary data (the Service Control Manager's key name of a service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
}

fn application() -> String {
    "Application".into()
}

fn is_application(c: &str) -> bool {
    c == "Application"
}

fn is_zero(t: &i64) -> bool {
    *t == 0
}

impl Default for SystemFacts {
    fn default() -> Self {
        Self {
            build: 0,
            ubr: None,
            product_name: None,
            edition: None,
            installation_type: None,
            is_64bit: true,
            elevated: true,
            boot_id: None,
            boot_local_seconds: None,
            hostname: None,
            winhttp_proxy: None,
            user_sid: None,
            drives: Default::default(),
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
    /// While true, HNS reports no management IP on any network (the vSwitch has not got the
    /// host's address yet).
    #[serde(default)]
    pub management_ip_pending: bool,
    /// While true, reading a firewall rule fails as the firewall COM API does under Wine
    /// (E_NOTIMPL).
    #[serde(default)]
    pub firewall_unreadable: bool,
    /// What `LocalPolicyModifyState` answers: Group Policy may override local rules, or a
    /// profile block all inbound traffic.
    /// What `GET /globals/version` answers; `None`: vmcompute.dll has no answer (as under
    /// Wine), and callers fall back to the Windows build.
    #[serde(default)]
    pub hns_version: Option<(u32, u32)>,
    #[serde(default)]
    pub firewall_modify_state: crate::host::FirewallModifyState,
    /// What Felix's health endpoint answers while CalicoFelix runs.
    #[serde(default)]
    pub felix_health: SimFelixHealth,
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
    /// How long its body takes to stop after the SCM's stop control (a Felix that does not
    /// exit on the first signal is killed after CalicoFelix's own stop timeout); `None`: at once.
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
            self.state = ServiceState::Stopped;
            self.pid = None;
            self.since = None;
            self.stopped_at_ms = None;
        }
    }
}

/// The machine's clock in Unix seconds, for start times.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimEndpoint {
    pub id: String,
    pub name: String,
    pub network_id: String,
    pub ip: Option<String>,
    /// Another host's endpoint (HCN `Flags` bit 1).
    #[serde(default)]
    pub remote: bool,
    /// `State` as HNS reports it (see `HnsEndpoint::state`); a pod's endpoint the CNI plugin
    /// attached reads 3 (AttachedSharing).
    #[serde(default)]
    pub state: Option<u16>,
    /// The HCN namespace (a pod's compartment) it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

pub fn key_of(key: &str) -> String {
    key.trim_end_matches('\\').to_ascii_lowercase()
}

impl State {
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

    pub fn network_named(&self, name: &str) -> Option<&serde_json::Value> {
        self.networks
            .iter()
            .find(|n| n.get("Name").and_then(|v| v.as_str()) == Some(name))
    }

    /// Creating the first non-NAT network creates the vSwitch: the host's address moves to a
    /// new `vEthernet (NIC)` interface, its routes follow, and persistent /32 link-local routes
    /// such as the cloud metadata route are lost (node-service.ps1 restores that one).
    pub fn create_vswitch(&mut self) {
        let Some(i) = self.primary_interface() else {
            return;
        };
        let old = self.interfaces[i].index;
        let new = self.interfaces.iter().map(|a| a.index).max().unwrap_or(0) + 1;
        let nic = &mut self.interfaces[i];
        nic.interface = format!("vEthernet ({})", nic.interface);
        nic.index = new;
        self.vswitch = Some((old, new));
        self.routes
            .retain(|r| !(r.destination.is_link_local() && r.prefix_len == 32));
        for r in &mut self.routes {
            if r.interface_index == old {
                r.interface_index = new;
            }
        }
    }

    /// Deleting the last network removes the vSwitch: the address returns to the NIC, with
    /// its own name and index; the vEthernet's routes go with it, but for those of the NIC's
    /// configuration (the /32 link-local routes added on the vEthernet are lost).
    pub fn remove_vswitch(&mut self) {
        let vswitch = self.vswitch.take();
        for a in &mut self.interfaces {
            if let Some(nic) = a
                .interface
                .strip_prefix("vEthernet (")
                .and_then(|n| n.strip_suffix(')'))
            {
                a.interface = nic.to_owned();
                if let Some((old, _)) = vswitch {
                    a.index = old;
                }
            }
        }
        if let Some((old, new)) = vswitch {
            self.routes.retain(|r| {
                !(r.interface_index == new && r.destination.is_link_local() && r.prefix_len == 32)
            });
            for r in &mut self.routes {
                if r.interface_index == new {
                    r.interface_index = old;
                }
            }
        }
    }

    fn primary_interface(&self) -> Option<usize> {
        self.interfaces
            .iter()
            .position(|i| !i.ip.is_loopback() && !i.ip.is_link_local())
    }

    /// The host's address on the vSwitch: the first non-loopback IPv4 address.
    pub fn primary_ip(&self) -> Option<String> {
        self.interfaces
            .iter()
            .find(|i| !i.ip.is_loopback() && !i.ip.is_link_local())
            .map(|i| i.ip.to_string())
    }
}
