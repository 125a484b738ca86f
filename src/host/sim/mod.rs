//! SimHost: a simulated Windows host in a directory (`state.json` and `fs/`), with the real
//! one's contracts (`host::contract`) and fault injection.

pub mod calico_node;
mod files;
mod handle;
mod listen;
mod profiles;
mod services;
mod state;

pub use handle::{
    At, Fault, FaultKind, SIM_CRASH_EXIT, ServiceStart, SimError, SimHost, StartHook,
};
pub use profiles::{DEFAULT_PROFILE, PROFILES};

use super::process::{LocalChild, SimulatedChild};
use super::*;
use state::State;
use std::net::Ipv4Addr;
use std::time::Duration;

impl Registry for SimHost {
    fn reg_get(&self, key: &str, name: &str) -> HostResult<Option<RegValue>> {
        let value = self.read(|s| {
            s.registry
                .get(&state::key_of(key))
                .and_then(|k| k.get(&name.to_ascii_lowercase()))
                .cloned()
        });
        match value {
            Some(v) if v.stored_len() > registry::MAX_VALUE_BYTES => Err(registry::too_long(
                format!("read registry value {key}\\{name}"),
                v.stored_len(),
            )),
            v => Ok(v),
        }
    }

    fn reg_set(&self, key: &str, name: &str, value: &RegValue) -> HostResult<()> {
        self.mutate(&format!("set registry value {key}\\{name}"), |s| {
            s.reg_set(key, name, value.clone());
            Ok(())
        })
    }

    fn reg_delete_value(&self, key: &str, name: &str) -> HostResult<()> {
        self.mutate(&format!("delete registry value {key}\\{name}"), |s| {
            if let Some(k) = s.registry.get_mut(&state::key_of(key)) {
                k.remove(&name.to_ascii_lowercase());
            }
            Ok(())
        })
    }

    fn reg_key_exists(&self, key: &str) -> HostResult<bool> {
        Ok(self.read(|s| s.registry.contains_key(&state::key_of(key))))
    }

    fn reg_delete_key(&self, key: &str) -> HostResult<()> {
        self.mutate(&format!("delete registry key {key}"), |s| {
            let k = state::key_of(key);
            let under = format!("{k}\\");
            s.registry
                .retain(|name, _| *name != k && !name.starts_with(&under));
            Ok(())
        })
    }
}

impl Hns for SimHost {
    fn hns_policy_lists(&self) -> HostResult<Vec<serde_json::Value>> {
        self.hns_available()?;
        Ok(self.read(|s| s.policy_lists.clone()))
    }

    fn hns_version(&self) -> HostResult<(u32, u32)> {
        self.hns_available()?;
        self.read(|s| s.settings.hns_version)
            .ok_or_else(|| HostError::Unavailable {
                what: "the HNS version".into(),
                reason: "the simulated host answers no HNS version".into(),
            })
    }

    fn hns_networks(&self) -> HostResult<Vec<HnsNetwork>> {
        self.hns_available()?;
        let (mut networks, pending, stable) = self.read(|s| {
            let networks: Vec<HnsNetwork> =
                s.networks.iter().filter_map(hns::parse_network).collect();
            let needs_stable = s.settings.management_ip_needs_stable_address;
            let stable = (needs_stable && s.vswitch.is_some()).then(|| s.vswitch_stable_ip());
            (networks, s.settings.management_ip_pending, stable)
        });
        for n in &mut networks {
            if pending {
                n.management_ip = None;
            }
            if let Some(stable) = &stable {
                n.management_ip.clone_from(stable);
            }
        }
        Ok(networks)
    }

    fn hns_endpoints(&self, network_id: &str) -> HostResult<Vec<HnsEndpoint>> {
        self.hns_available()?;
        Ok(self.read(|s| {
            s.endpoints
                .iter()
                .filter(|e| e.network_id.eq_ignore_ascii_case(network_id))
                .cloned()
                .collect()
        }))
    }

    fn hns_create_network(&self, spec_json: &str) -> HostResult<HnsNetwork> {
        self.hns_available()?;
        let (mut doc, name) = hns::checked_spec(spec_json)?;
        self.mutate(&format!("create HNS network {name}"), |s| {
            if s.networks.iter().any(|n| n["Name"] == name.as_str()) {
                return Err(HostError::exists(format!("HNS network {name}")));
            }
            doc["ID"] = s.settings.next_guid().into();
            if s.networks.is_empty() {
                let named = hns::parse_network(&doc).and_then(|n| n.adapter);
                s.create_vswitch(named.as_deref())?;
            }
            if let Some(ip) = s.vswitch_ip().or_else(|| s.primary_ip()) {
                let policies = doc
                    .as_object_mut()
                    .map(|o| o.entry("Policies").or_insert_with(|| serde_json::json!([])));
                if let Some(serde_json::Value::Array(p)) = policies {
                    p.push(serde_json::json!({"Type": "ProviderAddress", "Settings": {"ProviderAddress": ip}}));
                }
            }
            s.networks.push(doc.clone());
            let unnamed = || HostError::refused("create HNS network", "the document has no name");
            hns::parse_network(&doc).ok_or_else(unnamed)
        })
    }

    fn hns_delete_network(&self, id: &str) -> HostResult<()> {
        self.hns_available()?;
        self.mutate(&format!("delete HNS network {id}"), |s| {
            let i = s
                .network_index(id)
                .ok_or_else(|| HostError::not_found(format!("HNS network {id}")))?;
            s.networks.remove(i);
            s.endpoints
                .retain(|e| !e.network_id.eq_ignore_ascii_case(id));
            if s.networks.is_empty() {
                s.remove_vswitch();
            }
            Ok(())
        })
    }

    fn hns_delete_endpoint(&self, id: &str) -> HostResult<()> {
        self.hns_available()?;
        self.mutate(&format!("delete HNS endpoint {id}"), |s| {
            let before = s.endpoints.len();
            s.endpoints.retain(|e| !e.id.eq_ignore_ascii_case(id));
            if s.endpoints.len() == before {
                return Err(HostError::not_found(format!("HNS endpoint {id}")));
            }
            Ok(())
        })
    }

    fn hns_remove_namespace_endpoint(&self, namespace: &str, endpoint: &str) -> HostResult<()> {
        self.hns_available()?;
        self.mutate(
            &format!("remove HNS endpoint {endpoint} from namespace {namespace}"),
            |s| {
                let e = s
                    .endpoints
                    .iter_mut()
                    .find(|e| {
                        e.id.eq_ignore_ascii_case(endpoint)
                            && e.namespace
                                .as_deref()
                                .is_some_and(|n| n.eq_ignore_ascii_case(namespace))
                    })
                    .ok_or_else(|| {
                        HostError::not_found(format!(
                            "HNS endpoint {endpoint} in namespace {namespace}"
                        ))
                    })?;
                e.namespace = None;
                Ok(())
            },
        )
    }
}

impl SimHost {
    fn hns_available(&self) -> HostResult<()> {
        if self.read(|s| s.settings.hns_available) {
            Ok(())
        } else {
            Err(HostError::Unavailable {
                what: "the Host Network Service".into(),
                reason: "the Containers feature is not installed (computenetwork.dll is missing)"
                    .into(),
            })
        }
    }
}

/// Events of the simulated world, not the tool's calls: never counted, never failed.
impl SimHost {
    fn world<T>(&self, f: impl FnOnce(&mut State) -> T) -> HostResult<T> {
        self.apply(|s| Ok(f(s)))
    }

    /// Reboots: a new boot identity, automatic services running with new pids,
    /// calicoctl-win's own stopped; HNS networks survive.
    pub fn reboot(&self) -> HostResult<()> {
        self.world(|s| {
            let next = s
                .system
                .boot_id
                .as_deref()
                .and_then(|b| b.parse::<i64>().ok())
                .unwrap_or(0)
                + 3600;
            // A clean restart's System log: EventLog stopped (6006) and started (6005).
            for (id, time, message) in [
                (6006, next - 1, "The Event log service was stopped."),
                (6005, next, "The Event log service was started."),
            ] {
                let info = EventLevel::Information;
                let event = state::SimEvent::now("System", "EventLog", info, id, message);
                s.events.push(state::SimEvent { time, ..event });
            }
            s.system.boot_id = Some(next.to_string());
            s.system.boot_local_seconds = s.system.boot_local_seconds.map(|l| l + 3600);
            // A new boot: no clock step has moved it yet.
            s.system.boot_local_seconds_reported = None;
            s.system.boot_local_seconds_dated = None;
            for pid in s.processes.values_mut() {
                *pid = s.settings.next_pid();
            }
            for svc in s.services.values_mut() {
                let pid = s.settings.next_pid();
                let running = svc.start == StartType::Auto
                    && services::own_service_args(&svc.command_line).is_none();
                svc.state = if running {
                    ServiceState::Running
                } else {
                    ServiceState::Stopped
                };
                svc.pid = running.then_some(pid);
                svc.since = running.then_some(next);
            }
        })
    }

    /// An administrator's `New-NetFirewallRule -DisplayName`: added beside any of the name.
    pub fn admin_add_firewall_rule(&self, rule: &FirewallRule) -> HostResult<()> {
        self.mutate("administrator adds a firewall rule", |s| {
            use std::collections::btree_map::Entry;
            if let Entry::Vacant(e) = s.firewall.entry(rule.name.to_ascii_lowercase()) {
                e.insert(rule.clone());
            } else {
                s.firewall_more.push(rule.clone());
            }
            Ok(())
        })
    }

    /// An administrator's `Remove-NetFirewallRule -DisplayName`: every rule of the name.
    pub fn admin_remove_firewall_rules(&self, name: &str) -> HostResult<()> {
        self.mutate("administrator removes firewall rules", |s| {
            s.firewall.remove(&name.to_ascii_lowercase());
            s.firewall_more
                .retain(|r| !r.name.eq_ignore_ascii_case(name));
            Ok(())
        })
    }

    /// An administrator's `Set-NetFirewallRule` on every rule of this name.
    pub fn admin_edit_firewall_rules(
        &self,
        name: &str,
        edit: impl Fn(&mut FirewallRule),
    ) -> HostResult<()> {
        self.mutate("administrator edits a firewall rule", |s| {
            let key = name.to_ascii_lowercase();
            let more = s.firewall_more.iter_mut();
            for r in s.firewall.get_mut(&key).into_iter().chain(more) {
                if r.name.eq_ignore_ascii_case(name) {
                    edit(r);
                }
            }
            Ok(())
        })
    }

    pub fn set_process(&self, image: &str, pid: Option<u32>) -> HostResult<()> {
        self.world(|s| {
            let key = image.to_ascii_lowercase();
            match pid {
                Some(pid) => s.processes.insert(key, pid),
                None => s.processes.remove(&key),
            };
        })
    }

    /// Replaces the host's IPv4 addresses (a NIC still waiting for DHCP has only 169.254/16).
    pub fn set_ipv4_addresses(&self, addresses: Vec<InterfaceAddress>) -> HostResult<()> {
        self.world(|s| s.interfaces = addresses)
    }

    /// The node's address changes from `from` to `to`: the networks' management IP follows,
    /// the endpoints keep their provider address (projectcalico/calico#8700's account).
    pub fn readdress(&self, from: Ipv4Addr, to: Ipv4Addr) -> HostResult<()> {
        self.world(|s| {
            for a in s.interfaces.iter_mut().filter(|a| a.ip == from) {
                a.ip = to;
            }
            let (old, new) = (from.to_string(), to.to_string());
            for n in &mut s.networks {
                for p in n["Policies"].as_array_mut().into_iter().flatten() {
                    if p["Type"] == "ProviderAddress"
                        && p["Settings"]["ProviderAddress"] == old.as_str()
                    {
                        p["Settings"]["ProviderAddress"] = new.clone().into();
                    }
                }
            }
        })
    }

    /// Replaces the host's adapters, with their addresses.
    pub fn set_adapters(&self, adapters: Vec<Adapter>) -> HostResult<()> {
        self.world(|s| {
            s.interfaces = adapters
                .iter()
                .flat_map(|a| {
                    let at = |x: &AdapterAddress| {
                        InterfaceAddress::new(&a.name, a.index, x.ip, x.prefix_len)
                    };
                    a.addresses.iter().map(at)
                })
                .collect();
            s.adapters = adapters.iter().map(state::stored).collect();
        })
    }

    /// Sets `SimSettings::vswitch_takes_dhcp`.
    pub fn set_vswitch_takes_dhcp(&self, on: bool) -> HostResult<()> {
        self.world(|s| s.settings.vswitch_takes_dhcp = on)
    }

    /// Sets `SimSettings::management_ip_needs_stable_address`.
    pub fn set_management_ip_needs_stable_address(&self, on: bool) -> HostResult<()> {
        self.world(|s| s.settings.management_ip_needs_stable_address = on)
    }

    /// Sets `SimSettings::children_unstoppable`.
    pub fn set_children_unstoppable(&self, on: bool) -> HostResult<()> {
        self.world(|s| s.settings.children_unstoppable = on)
    }

    /// Sets `SimSettings::children_linger_ms`.
    pub fn set_children_linger(&self, linger: Option<Duration>) -> HostResult<()> {
        let ms = linger.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.world(|s| s.settings.children_linger_ms = ms)
    }

    /// The first `first` sends of a stop of `name` (`None`: every one) block for `takes`, then
    /// are refused as undelivered.
    pub fn set_stop_undelivered(
        &self,
        name: &str,
        first: Option<u32>,
        takes: Duration,
    ) -> HostResult<()> {
        self.undelivered(name, first, takes, false)
    }

    /// As `set_stop_undelivered` for every send, each taken late (`Undelivered::taken_late`).
    pub fn set_stop_taken_late(&self, name: &str, takes: Duration) -> HostResult<()> {
        self.undelivered(name, None, takes, true)
    }

    fn undelivered(
        &self,
        name: &str,
        first: Option<u32>,
        takes: Duration,
        taken_late: bool,
    ) -> HostResult<()> {
        let undelivered = state::Undelivered {
            first,
            takes_ms: u64::try_from(takes.as_millis()).unwrap_or(u64::MAX),
            refused: 0,
            taken_late,
        };
        self.world(|s| {
            s.settings
                .stop_undelivered
                .insert(name.to_ascii_lowercase(), undelivered);
        })
    }

    /// How many stops of `name` were refused so (`set_stop_undelivered`).
    pub fn stops_undelivered(&self, name: &str) -> u32 {
        self.read(|s| {
            s.settings
                .stop_undelivered
                .get(&name.to_ascii_lowercase())
                .map_or(0, |u| u.refused)
        })
    }

    /// The command lines of the programs started so far, in order.
    pub fn started(&self) -> Vec<String> {
        self.read(|s| s.started.clone())
    }

    /// While pending, HNS reports no management IP on any network.
    pub fn set_management_ip_pending(&self, pending: bool) -> HostResult<()> {
        self.world(|s| s.settings.management_ip_pending = pending)
    }

    /// Whether the kernel gives the boot time (`false`: no boot identity).
    pub fn set_boot_known(&self, known: bool, boot_id: &str) -> HostResult<()> {
        self.world(|s| s.system.boot_id = known.then(|| boot_id.to_owned()))
    }

    /// How long the service `name` takes to stop once asked.
    pub fn set_stop_takes(&self, name: &str, takes: Duration) -> HostResult<()> {
        self.world(|s| {
            if let Some(svc) = s.services.get_mut(&name.to_ascii_lowercase()) {
                svc.stop_takes_ms = Some(u64::try_from(takes.as_millis()).unwrap_or(u64::MAX));
            }
        })
    }

    /// Writes a System log event as the SCM does: `display_name` in the message, `key` in
    /// the binary data (with `/<state>` for 7036).
    pub fn log_scm_event(&self, id: u32, display_name: &str, key: &str) -> HostResult<()> {
        self.world(|s| {
            let (message, binary) = match id {
                7036 => (
                    format!("The {display_name} service entered the running state."),
                    format!("{key}/4"),
                ),
                _ => (
                    format!("The {display_name} service terminated unexpectedly."),
                    key.to_owned(),
                ),
            };
            let scm = "Service Control Manager";
            let event = state::SimEvent::now("System", scm, EventLevel::Error, id, &message);
            s.events.push(state::SimEvent {
                binary: Some(binary),
                ..event
            });
        })
    }

    /// Puts the endpoints named `name` in HCN namespace `namespace`, as a container's start.
    pub fn put_in_namespace(&self, name: &str, namespace: &str) -> HostResult<()> {
        self.world(|s| {
            for e in s.endpoints.iter_mut().filter(|e| e.name == name) {
                e.namespace = Some(namespace.to_owned());
            }
        })
    }

    /// What HNS answers for its version (`None`: no answer, as under Wine).
    pub fn set_hns_version(&self, version: Option<(u32, u32)>) -> HostResult<()> {
        self.world(|s| s.settings.hns_version = version)
    }

    /// A pod's endpoint as Calico's CNI plugin makes it: attached, its provider address the
    /// network's management IP.
    pub fn add_endpoint(&self, network_id: &str, name: &str, ip: &str) -> HostResult<()> {
        self.push_endpoint(network_id, name, ip, false)
    }

    /// An endpoint with the network's management IP as provider address; `remote`: as
    /// calico-node's Overlay host endpoint (projectcalico/calico v3.32.1
    /// `cni-plugin/pkg/dataplane/windows/dataplane_windows.go`, `createAndAttachVxlanHostEP`:
    /// `IsRemoteEndpoint: true`, attached to nothing, so no state is claimed for it).
    pub(super) fn push_endpoint(
        &self,
        network_id: &str,
        name: &str,
        ip: &str,
        remote: bool,
    ) -> HostResult<()> {
        self.mutate(&format!("add endpoint {name}"), |s| {
            let at = s
                .network_index(network_id)
                .ok_or_else(|| HostError::not_found(format!("HNS network {network_id}")))?;
            let provider_address =
                hns::parse_network(&s.networks[at]).and_then(|n| n.management_ip);
            let id = s.settings.next_guid();
            // A pod's attached endpoint reads 3 (AttachedSharing).
            s.endpoints.push(HnsEndpoint {
                id,
                name: name.to_owned(),
                network_id: network_id.to_owned(),
                ip: Some(ip.to_owned()),
                remote,
                state: (!remote).then_some(3),
                namespace: None,
                provider_address,
                mac: None,
            });
            Ok(())
        })
    }
}

impl Network for SimHost {
    fn ipv4_addresses(&self) -> HostResult<Vec<InterfaceAddress>> {
        Ok(self.read(|s| s.interfaces.clone()))
    }

    fn adapters(&self) -> HostResult<Vec<Adapter>> {
        Ok(self.read(|s| s.ipv4_adapters()))
    }

    fn ethernet_interfaces(&self) -> HostResult<Vec<Adapter>> {
        Ok(self.read(|s| s.ethernet_interfaces()))
    }

    fn set_interface_metric(&self, index: u32, metric: u32) -> HostResult<()> {
        self.mutate(&format!("set the metric of interface {index}"), |s| {
            let a = s.described_adapter(index)?;
            a.metric = metric;
            Ok(())
        })
    }

    /// `EnableStatic` turns DHCP off and sets the addresses; `SetDNSServerSearchOrder` and
    /// `SetDNSDomain` set what `GetAdaptersAddresses` then reports.
    fn configure_adapter(&self, index: u32, setting: &ip_config::AdapterSetting) -> HostResult<()> {
        use ip_config::AdapterSetting;
        self.mutate(&format!("configure interface {index}"), |s| {
            let a = s.described_adapter(index)?;
            let name = a.name.clone();
            match setting {
                AdapterSetting::Static(addresses) => {
                    a.dhcp = false;
                    s.interfaces.retain(|x| x.index != index);
                    let at =
                        |(ip, len): &(Ipv4Addr, u8)| InterfaceAddress::new(&name, index, *ip, *len);
                    s.interfaces.extend(addresses.iter().map(at));
                }
                AdapterSetting::DnsServers(servers) => a.dns_servers = servers.clone(),
                AdapterSetting::DnsSuffix(suffix) => a.dns_suffix = suffix.clone(),
            }
            Ok(())
        })
    }

    fn add_address(&self, index: u32, ip: Ipv4Addr, prefix_len: u8) -> HostResult<()> {
        self.mutate(
            &format!("add {ip}/{prefix_len} to interface {index}"),
            |s| {
                let a = s.described_adapter(index)?;
                let name = a.name.clone();
                if s.interfaces.iter().any(|x| x.index == index && x.ip == ip) {
                    return Err(HostError::exists(format!("address {ip} on {name}")));
                }
                s.interfaces
                    .push(InterfaceAddress::new(&name, index, ip, prefix_len));
                Ok(())
            },
        )
    }

    fn routes(&self) -> HostResult<Vec<Route>> {
        Ok(self.read(|s| s.routes.clone()))
    }

    fn add_route(&self, route: &Route) -> HostResult<()> {
        let what = format!("route {}/{}", route.destination, route.prefix_len);
        self.mutate(&format!("add {}", route.describe()), |s| {
            // CreateIpForwardEntry2's ERROR_NOT_FOUND for an unknown interface index.
            if !s
                .interfaces
                .iter()
                .any(|i| i.index == route.interface_index)
            {
                return Err(HostError::not_found(format!(
                    "interface {} for {what}",
                    route.interface_index
                )));
            }
            if s.routes.iter().any(|r| {
                r.destination == route.destination
                    && r.prefix_len == route.prefix_len
                    && r.next_hop == route.next_hop
            }) {
                return Err(HostError::Exists { what });
            }
            s.routes.push(route.clone());
            Ok(())
        })
    }

    /// The simulated loopback's servers: kube-proxy's `/healthz`, and Felix's health endpoint
    /// while CalicoFelix runs (libcalico-go lib/health/health.go; `SimSettings::felix_health`).
    fn local_http_get(
        &self,
        port: u16,
        path: &str,
        _timeout: std::time::Duration,
    ) -> HostResult<Option<crate::host::http_probe::Answer>> {
        use state::SimFelixHealth;
        let runs = |role: crate::layout::Role| {
            self.read(|s| {
                s.services
                    .get(&role.service_name().to_ascii_lowercase())
                    .is_some_and(|f| f.state == crate::host::ServiceState::Running)
            })
        };
        // kube-proxy's health server (kubernetes pkg/proxy/healthcheck/proxy_health.go):
        // `/healthz` (the one path asked) 503 with `"nodeEligible":false` unless eligible.
        if port == crate::layout::KUBE_PROXY_HEALTHZ_PORT {
            if !runs(crate::layout::Role::KubeProxy) {
                return Ok(None);
            }
            let eligible = !self.read(|s| s.settings.kube_proxy_node_ineligible);
            let status = r#""healthy":true,"status":{"IPv4":{"lastUpdated":"2026-01-01T00:00:00Z","healthy":true}}"#;
            let times =
                r#""lastUpdated":"2026-01-01T00:00:00Z","currentTime":"2026-01-01T00:00:00Z""#;
            let (code, body) = match path {
                "/healthz" => (
                    if eligible { 200 } else { 503 },
                    format!("{{{times},\"nodeEligible\":{eligible},{status}}}"),
                ),
                // Any other path is 404, as the real server's mux answers: a product asking
                // the wrong path fails in tests as on a node.
                _ => (404, "404 page not found\n".to_owned()),
            };
            return Ok(Some(crate::host::http_probe::Answer { code, body }));
        }
        let health = self.read(|s| s.settings.felix_health);
        if port != crate::layout::FELIX_HEALTH_PORT
            || !runs(crate::layout::Role::Felix)
            || health == SimFelixHealth::Silent
        {
            return Ok(None);
        }
        // `/liveness` and `/readiness`, the paths asked; any other is 404.
        let (code, body) = match (path, health) {
            ("/readiness", SimFelixHealth::NotReady) => (503, "felix-startup  not ready"),
            ("/liveness" | "/readiness", _) => (200, "felix-startup  live  ready"),
            _ => (404, "404 page not found"),
        };
        Ok(Some(crate::host::http_probe::Answer {
            code,
            body: body.to_owned(),
        }))
    }
}

impl SystemInfo for SimHost {
    fn system_facts(&self) -> HostResult<SystemFacts> {
        Ok(self.read(|s| s.system.clone()))
    }
}

impl Processes for SimHost {
    fn spawn(&self, spec: &ProcessSpec) -> HostResult<Box<dyn Child>> {
        // A program on this machine (a test's fake child) runs for real.
        if !files::is_windows_path(&spec.program) {
            return Ok(Box::new(LocalChild::spawn(spec)?));
        }
        if self.file_access(&spec.program)?.is_none() {
            return Err(HostError::not_found(format!("program {}", spec.program)));
        }
        let command = std::iter::once(spec.program.as_str())
            .chain(spec.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let pid = self.mutate(&format!("start {}", spec.program), |s| {
            s.started.push(command.clone());
            let pid = s.settings.next_pid();
            if let Some(ms) = s.settings.children_linger_ms {
                let now = state::unix_now_ms();
                let until = now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX / 2));
                let started = u64::try_from(now).unwrap_or_default();
                s.settings.lingering.insert(pid, (started, until));
            }
            Ok(pid)
        })?;
        let release = self
            .open_read(&spec.program)?
            .and_then(|f| crate::release::version::read_binary_version(f).ok())
            .flatten();
        let (exited, log) = match calico_node::component(spec, release.as_ref()) {
            Some(Err((code, message))) => (Some(code), format!("{message}\n")),
            Some(Ok(calico_node::Component::Startup)) => {
                let (code, log) = calico_node::startup(self, spec)?;
                (Some(code), log)
            }
            Some(Ok(calico_node::Component::MonitorToken)) => {
                calico_node::monitor_token(self, spec)?
            }
            // `kube-proxy --version` prints `Kubernetes v1.33.2`: the file holds the version.
            None if spec.args == ["--version"]
                && spec
                    .program
                    .to_ascii_lowercase()
                    .ends_with("kube-proxy.exe") =>
            {
                let text = self.read_file(&spec.program)?.unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                let version = text
                    .split_whitespace()
                    .find(|w| {
                        w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit())
                    })
                    .unwrap_or("v1.33.0");
                (Some(0), format!("Kubernetes {version}\n"))
            }
            // felix, confd and other programs run until stopped.
            _ => (None, String::new()),
        };
        if let Output::Lines(sink) = &spec.output {
            for line in log.lines() {
                sink.write(format!("{line}\n").as_bytes());
            }
        }
        let unstoppable = self.read(|s| s.settings.children_unstoppable);
        Ok(Box::new(SimulatedChild {
            pid,
            exited,
            unstoppable,
        }))
    }

    fn process_pid(&self, image_name: &str) -> HostResult<Option<u32>> {
        Ok(self.read(|s| s.processes.get(&image_name.to_ascii_lowercase()).copied()))
    }

    /// Only a lingering simulated program runs (`set_children_linger`).
    fn process_running(&self, pid: u32) -> Option<Option<u64>> {
        let now = state::unix_now_ms();
        self.read(|s| s.settings.lingering.get(&pid).copied())
            .filter(|(_, until)| now < *until)
            .map(|(started, _)| Some(started))
    }
}

/// A rule as the Windows host reads it: its remote addresses as Windows keeps them, read
/// through `FirewallRule::remote_addresses_from` as the Windows host does.
fn read_back(mut rule: FirewallRule) -> FirewallRule {
    let stored = stored_remote_addresses(&rule.remote_addresses_text());
    rule.remote_addresses = FirewallRule::remote_addresses_from(&stored);
    rule
}

/// What Windows keeps of `INetFwRule::RemoteAddresses` (MS-FASP FW_IPV4_SUBNET: address and
/// mask): an IPv4 token read back in mask notation, `/32` bare; anything else as written.
fn stored_remote_addresses(text: &str) -> String {
    let token = |t: &str| {
        let normal = crate::host::firewall::normal_address(t);
        let parsed = normal
            .split_once('/')
            .and_then(|(ip, p)| Some((ip.parse::<Ipv4Addr>().ok()?, p.parse::<u32>().ok()?)));
        match parsed {
            Some((ip, 32)) => ip.to_string(),
            Some((ip, p @ 1..=31)) => format!("{ip}/{}", Ipv4Addr::from(u32::MAX << (32 - p))),
            _ => t.trim().to_owned(),
        }
    };
    text.split(',').map(token).collect::<Vec<_>>().join(",")
}

impl Firewall for SimHost {
    fn firewall_rules(&self, name: &str) -> HostResult<Vec<FirewallRule>> {
        if self.read(|s| s.settings.firewall_unreadable) {
            return Err(HostError::Api {
                op: format!("read firewall rule {name}"),
                message: "Not implemented".into(),
                code: 0x8000_4001,
            });
        }
        let rules = self.read(|s| s.rules_named(name));
        Ok(rules.into_iter().map(read_back).collect())
    }

    /// As the Windows host's: a taken name is refused before `INetFwRules::Add`.
    fn firewall_add(&self, rule: &FirewallRule) -> HostResult<()> {
        self.mutate(&format!("add firewall rule {}", rule.name), |s| {
            let key = rule.name.to_ascii_lowercase();
            if s.firewall.contains_key(&key) {
                return Err(HostError::exists(format!("firewall rule {}", rule.name)));
            }
            s.firewall.insert(key, rule.clone());
            Ok(())
        })
    }

    /// As the Windows host's: refused while several rules have the name.
    fn firewall_remove(&self, name: &str) -> HostResult<bool> {
        self.mutate(&format!("remove firewall rule {name}"), |s| {
            let count = s.rules_named(name).len();
            if count > 1 {
                return Err(crate::host::firewall::several(name, count));
            }
            Ok(s.firewall.remove(&name.to_ascii_lowercase()).is_some())
        })
    }

    fn firewall_modify_state(&self) -> HostResult<crate::host::FirewallModifyState> {
        Ok(self.read(|s| s.settings.firewall_modify_state))
    }
}

impl EventLog for SimHost {
    /// Not a mutating call of the fault walks; an unregistered source writes too, as on Windows.
    fn report_event(
        &self,
        source: &str,
        level: EventLevel,
        id: u32,
        message: &str,
    ) -> HostResult<()> {
        self.world(|s| {
            let event = state::SimEvent::now("Application", source, level, id, message);
            s.events.push(event);
        })
    }

    fn read_events(
        &self,
        query: &crate::host::events::EventQuery,
        max: usize,
    ) -> HostResult<Vec<crate::host::events::LoggedEvent>> {
        Ok(self.read(|s| {
            s.events
                .iter()
                .rev()
                .filter(|e| e.channel == query.channel && query.matches(&e.source, e.id))
                .take(max)
                .map(|e| crate::host::events::LoggedEvent {
                    time: crate::duration::time_text(e.time),
                    provider: e.source.clone(),
                    id: e.id,
                    level: match e.level {
                        EventLevel::Error => 2,
                        EventLevel::Warning => 3,
                        EventLevel::Information => 4,
                    },
                    data: vec![e.message.clone()],
                    binary: e.binary.clone(),
                })
                .collect()
        }))
    }
}

impl Host for SimHost {
    fn listen_tcp(
        &self,
        port: u16,
    ) -> Result<std::net::TcpListener, crate::host::listen::ListenError> {
        let settings = self.read(|s| s.settings.clone());
        listen::listen(&settings, port)
    }

    fn kind(&self) -> HostKind {
        let profile = self.profile();
        if self.temp.is_some() {
            HostKind::InMemory { profile }
        } else {
            HostKind::Simulated {
                dir: self.dir.display().to_string(),
                profile,
            }
        }
    }
}
