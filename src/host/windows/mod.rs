//! The real Windows host: API calls and conversions only (windows-registry, windows-service,
//! windows-sys, HCN loaded at run time, the firewall's COM API). Logic lives in the
//! cross-platform modules above.

#[cfg(test)]
mod cmdline_tests;
pub mod console;
#[cfg(test)]
mod culture_tests;
mod eventlog;
mod ffi;
pub(crate) mod files;
pub(crate) mod firewall;
mod firewall_unset;
#[cfg(test)]
mod firewall_unset_tests;
mod hcn;
#[cfg(test)]
mod hcn_tests;
#[cfg(test)]
mod job_tests;
mod listen;
mod network;
/// A test's own route removed (the Host trait has no route delete).
#[cfg(test)]
pub(crate) use network::delete_route;
#[cfg(test)]
mod probe_tests;
pub mod process;
mod registry;
mod services;
#[cfg(test)]
mod stop_tests;
mod system;
#[cfg(test)]
mod version_tests;
#[cfg(test)]
mod winhttp_tests;
mod wmi;

use super::process::LocalChild;
use super::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// This machine; `computenetwork.dll` and `vmcompute.dll` loaded at first need, kept.
#[derive(Default)]
pub struct WindowsHost {
    hcn: std::sync::OnceLock<hcn::Hcn>,
    vmcompute: std::sync::OnceLock<hcn::VmCompute>,
}

impl WindowsHost {
    pub fn new() -> Self {
        Self::default()
    }

    fn hcn(&self) -> HostResult<&hcn::Hcn> {
        once(&self.hcn, hcn::Hcn::load)
    }

    /// HNS v1's entry point.
    fn vmcompute(&self) -> HostResult<&hcn::VmCompute> {
        once(&self.vmcompute, hcn::VmCompute::load)
    }
}

/// A DLL's entry points, loaded once; a failed load is tried again at the next call.
fn once<T>(cell: &std::sync::OnceLock<T>, load: fn() -> HostResult<T>) -> HostResult<&T> {
    if let Some(loaded) = cell.get() {
        return Ok(loaded);
    }
    let loaded = load()?;
    Ok(cell.get_or_init(|| loaded))
}

impl Registry for WindowsHost {
    fn reg_get(&self, key: &str, name: &str) -> HostResult<Option<RegValue>> {
        registry::get(key, name)
    }
    fn reg_set(&self, key: &str, name: &str, value: &RegValue) -> HostResult<()> {
        registry::set(key, name, value)
    }
    fn reg_delete_value(&self, key: &str, name: &str) -> HostResult<()> {
        registry::delete_value(key, name)
    }
    fn reg_key_exists(&self, key: &str) -> HostResult<bool> {
        registry::key_exists(key)
    }
    fn reg_delete_key(&self, key: &str) -> HostResult<()> {
        registry::delete_key(key)
    }
}

impl Services for WindowsHost {
    fn service_query(&self, name: &str) -> HostResult<Option<InstalledService>> {
        services::query(name)
    }
    fn service_create(&self, spec: &ServiceSpec) -> HostResult<()> {
        services::create(spec)
    }
    fn service_update(&self, spec: &ServiceSpec) -> HostResult<()> {
        services::update(spec)
    }
    fn service_start(&self, name: &str, timeout: Duration) -> HostResult<()> {
        services::start(name, timeout)
    }
    fn service_stop(&self, name: &str, timeout: Duration) -> HostResult<()> {
        services::stop(name, timeout)
    }
    fn service_delete(&self, name: &str) -> HostResult<()> {
        services::delete(name)
    }
}

impl Hns for WindowsHost {
    fn hns_networks(&self) -> HostResult<Vec<HnsNetwork>> {
        self.hcn()?.networks()
    }
    /// The endpoints from HCN v2, their state from HNS v1 (`hns::with_v1_states`).
    fn hns_endpoints(&self, network_id: &str) -> HostResult<Vec<HnsEndpoint>> {
        let mut endpoints = self.hcn()?.endpoints(network_id)?;
        let states = self.vmcompute().and_then(|v| v.endpoint_states()).ok();
        hns::with_v1_states(&mut endpoints, states.as_ref());
        Ok(endpoints)
    }
    fn hns_version(&self) -> HostResult<(u32, u32)> {
        self.vmcompute()?.version()
    }
    fn hns_policy_lists(&self) -> HostResult<Vec<serde_json::Value>> {
        self.vmcompute()?.policy_lists()
    }
    fn hns_create_network(&self, spec_json: &str) -> HostResult<HnsNetwork> {
        let (_, name) = hns::checked_spec(spec_json)?;
        let hcn = self.hcn()?;
        // HNS itself allows two networks of one name; the contract does not.
        if hcn.networks()?.iter().any(|n| n.name == name) {
            return Err(HostError::Exists {
                what: format!("HNS network {name}"),
            });
        }
        hcn.create_network(spec_json, &name)
    }
    fn hns_delete_network(&self, id: &str) -> HostResult<()> {
        self.hcn()?.delete_network(id)
    }
    fn hns_delete_endpoint(&self, id: &str) -> HostResult<()> {
        self.hcn()?.delete_endpoint(id)
    }
    fn hns_remove_namespace_endpoint(&self, namespace: &str, endpoint: &str) -> HostResult<()> {
        self.hcn()?.remove_namespace_endpoint(namespace, endpoint)
    }
}

impl Files for WindowsHost {
    fn read_file(&self, path: &str) -> HostResult<Option<Vec<u8>>> {
        read_capped(Path::new(path), path)
    }
    fn replace_file(&self, path: &str, contents: &[u8], access: Access) -> HostResult<()> {
        files::replace_with(path, crate::files::Contents::Bytes(contents), access)
    }
    fn file_access(&self, path: &str) -> HostResult<Option<Access>> {
        files::access(path)
    }
    fn copy_in(&self, from: &Path, to: &str) -> HostResult<()> {
        files::replace_with(to, crate::files::Contents::File(from), Access::Normal)
    }
    fn copy_file(&self, from: &str, to: &str, access: Access) -> HostResult<bool> {
        files::copy_file(from, to, access)
    }
    fn remove_file(&self, path: &str) -> HostResult<bool> {
        files::remove(path)
    }
    fn remove_empty_dir(&self, path: &str) -> HostResult<bool> {
        files::remove_empty_dir(path)
    }
    fn remove_tree(&self, path: &str) -> HostResult<bool> {
        // std's remove_dir_all removes a junction or link inside without following it.
        match std::fs::remove_dir_all(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(HostError::io(format!("remove {path}"), e)),
        }
    }
    fn open_update(&self, path: &str) -> HostResult<Option<OpenedFile>> {
        files::open_update(path)
    }
    fn final_path(&self, path: &str) -> HostResult<Option<String>> {
        files::final_path(path)
    }
    fn dir_exists(&self, path: &str) -> HostResult<bool> {
        Ok(Path::new(path).is_dir())
    }
    fn is_reparse_point(&self, path: &str) -> HostResult<bool> {
        files::is_reparse_point(path)
    }
    fn security(&self, path: &str) -> HostResult<Option<String>> {
        files::security(path)
    }
    fn link_security(&self, path: &str) -> HostResult<Option<String>> {
        files::sddl_of(path, true)
    }
    fn create_dir(&self, path: &str) -> HostResult<bool> {
        files::create_dir(path)
    }
    fn set_security(&self, path: &str, sddl: &str) -> HostResult<()> {
        files::set_security(path, sddl)
    }

    fn local_path(&self, path: &str) -> HostResult<PathBuf> {
        Ok(PathBuf::from(path))
    }
}

impl Network for WindowsHost {
    fn ipv4_addresses(&self) -> HostResult<Vec<InterfaceAddress>> {
        network::addresses()
    }
    fn adapters(&self) -> HostResult<Vec<Adapter>> {
        network::adapters()
    }
    fn ethernet_interfaces(&self) -> HostResult<Vec<Adapter>> {
        network::ethernet_interfaces()
    }
    fn set_interface_metric(&self, index: u32, metric: u32) -> HostResult<()> {
        network::set_interface_metric(index, metric)
    }
    fn configure_adapter(&self, index: u32, setting: &ip_config::AdapterSetting) -> HostResult<()> {
        let call = setting.wmi_call().map_err(|reason| HostError::Refused {
            what: format!("configure interface {index}"),
            reason,
        })?;
        wmi::call_method(index, &call)
    }
    fn add_address(&self, index: u32, ip: std::net::Ipv4Addr, prefix_len: u8) -> HostResult<()> {
        network::add_address(index, ip, prefix_len)
    }
    fn routes(&self) -> HostResult<Vec<Route>> {
        network::routes()
    }
    fn add_route(&self, route: &Route) -> HostResult<()> {
        network::add_route(route)
    }
    fn local_http_get(
        &self,
        port: u16,
        path: &str,
        timeout: Duration,
    ) -> HostResult<Option<http_probe::Answer>> {
        http_probe::get(port, path, timeout)
    }
}

impl SystemInfo for WindowsHost {
    fn system_facts(&self) -> HostResult<SystemFacts> {
        system::facts()
    }
}

impl Processes for WindowsHost {
    fn spawn(&self, spec: &ProcessSpec) -> HostResult<Box<dyn Child>> {
        Ok(Box::new(LocalChild::spawn(spec)?))
    }
    fn process_pid(&self, image_name: &str) -> HostResult<Option<u32>> {
        process::pid_of(image_name)
    }
    fn process_running(&self, pid: u32) -> Option<Option<u64>> {
        process::running(pid)
    }
}

impl Firewall for WindowsHost {
    fn firewall_rules(&self, name: &str) -> HostResult<Vec<FirewallRule>> {
        firewall::rules(name)
    }
    fn firewall_add(&self, rule: &FirewallRule) -> HostResult<()> {
        firewall::add(rule)
    }
    fn firewall_remove(&self, name: &str) -> HostResult<bool> {
        firewall::remove(name)
    }
    fn firewall_modify_state(&self) -> HostResult<FirewallModifyState> {
        firewall::modify_state()
    }
}

impl EventLog for WindowsHost {
    fn report_event(
        &self,
        source: &str,
        level: EventLevel,
        id: u32,
        message: &str,
    ) -> HostResult<()> {
        eventlog::report(source, level, id, message)
    }
    fn read_events(
        &self,
        query: &events::EventQuery,
        max: usize,
    ) -> HostResult<Vec<events::LoggedEvent>> {
        eventlog::read(query, max)
    }
}

impl Host for WindowsHost {
    fn listen_tcp(&self, port: u16) -> Result<std::net::TcpListener, super::listen::ListenError> {
        listen::listen(port)
    }

    fn kind(&self) -> HostKind {
        HostKind::Windows
    }
}
