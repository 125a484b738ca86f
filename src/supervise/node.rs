//! CalicoNode: the start-up after a boot, then calico-node startup whenever kubelet restarts
//! (`node-service.ps1`, reference §3.2 and §3.6–3.7, with every wait bounded).

use super::child::{Backoff, ChildEnd, report_failure, run_child};
use super::log::Log;
use super::renew::Renewal;
use super::settings::{Component, Launch, Result, Settings, SuperviseError, environment, required};
use super::stop::Stop;
use crate::host::{HnsNetwork, Host, HostError, RegValue, Route};
use crate::installed::addressing;
use crate::installed::failure::{self, Blocks};
use crate::installed::platform::{self, Platform};
use crate::layout::EXTERNAL_NETWORK;
use crate::layout::env::EnvVars;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// The cloud metadata service's address; the vSwitch drops its route.
use crate::installed::routes::METADATA;
use crate::layout::BOOT_ID_VALUE;
use crate::layout::CALICO_KEY;
use crate::layout::LEGACY_BOOT_VALUE;
use crate::layout::ROUTES_VALUE;
/// The service this body is, in what it records.
const NODE: &str = "CalicoNode";
/// How many startup attempts the simulated service start makes before it reports failure.
const START_PHASE_ATTEMPTS: u32 = 3;

/// What the start-up found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartPhase {
    pub first_run_since_boot: bool,
    pub deleted_networks: Vec<String>,
    pub created_external: bool,
    pub restored_routes: Vec<String>,
    pub platform: Option<Platform>,
}

pub use crate::installed::boot_marker::{init_done, stored_boot};

/// The CalicoNode service body: start-up, then startup runs until stopped, with the renewal
/// of calico-node's token beside it. Calico's own token refresher (`-monitor-token`) is not
/// run: node-service.ps1 runs it only inside a HostProcess container, which these services
/// never are (see `release::version`).
pub fn run(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    let env = environment(host, s)?;
    let program = required(host, s, Component::Startup)?;
    init(host, s, &env, stop, log)?;
    let mut renewal = Renewal::prepare(host, &env, log);
    let listener = s.metrics_port.and_then(|port| {
        super::metrics_server::bind(host, port)
            .map_err(|e| log.warn(&format!("metrics endpoint on port {port}: {e}")))
            .ok()
    });
    let out = std::thread::scope(|scope| {
        let serving = listener.as_ref().map(|l| {
            scope.spawn(|| {
                super::metrics_server::serve(host, &s.install_root, s.diags, l, stop, log)
            })
        });
        let out = watch_kubelet(host, s, &env, &program, renewal.as_mut(), stop, log);
        // The server ends with the stop; a body that ended on its own stops it too.
        if serving.is_some() && !stop.requested() {
            stop.request();
        }
        out
    });
    if stop.is_shutdown() {
        // The next boot makes the networks again: no pod may start before it has.
        super::cni::withhold(host, &env, "the machine is shutting down", log)?;
    }
    out
}

/// Runs calico-node startup whenever kubelet's process changes (node-service.ps1's loop),
/// renews calico-node's token when it is due, answers an HNS restart (`hns_watch`) and keeps
/// the node's condition in the cluster (`condition`).
fn watch_kubelet(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    program: &Launch,
    mut renewal: Option<&mut Renewal>,
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    let mut last: Option<u32> = None;
    let mut said_waiting = false;
    let mut hns = super::hns_watch::HnsWatch::default();
    let mut condition = super::condition::Reporter::prepare(env, &s.install_root);
    let mut addresses = AddressWatch::default();
    let mut groups = super::api_group::GroupWatch::new(env);
    loop {
        hns.check(host, s, log);
        let internal = condition.as_ref().and_then(|c| c.internal_ip());
        match host.process_pid("kubelet.exe") {
            Ok(Some(pid)) if last != Some(pid) => {
                let again = if last.is_some() { " again" } else { "" };
                log.info(&format!(
                    "kubelet is running{again} (pid {pid}): running calico-node startup"
                ));
                // The addresses as startup begins: a change while it runs is followed next.
                let seen = AddressWatch::look(host);
                startup(host, s, env, program, None, stop, log)?;
                super::cni::release(host, env, log)?;
                keep_ep_metric(host, log);
                addresses.ran_with(seen, internal);
                last = Some(pid);
                said_waiting = false;
            }
            Ok(Some(_)) => {
                if let Some(what) = addresses.changed(host, internal) {
                    follow_address(host, log, &what);
                    let seen = AddressWatch::look(host);
                    startup(host, s, env, program, None, stop, log)?;
                    super::cni::release(host, env, log)?;
                    keep_ep_metric(host, log);
                    addresses.ran_with(seen, internal);
                }
            }
            Ok(None) if !said_waiting => {
                log.info("kubelet is not running; waiting for it to start");
                said_waiting = true;
            }
            Err(e) => log.warn(&format!("cannot list processes: {e}")),
            _ => {}
        }
        let mut wait = s.timing.kubelet_poll;
        if let Some(r) = renewal.as_deref_mut() {
            r.keep(host, log);
            wait = wait.min(r.due_in());
        }
        // The condition once kubelet runs (its node exists and calico-node startup ran).
        if let Some(c) = condition.as_mut().filter(|_| last.is_some()) {
            c.keep(host, log);
            wait = wait.min(c.due_in());
            // A refused token is known within the minute, not at its renewal time.
            if c.refused()
                && let Some(r) = renewal.as_deref_mut()
            {
                r.refused_elsewhere(log);
                r.keep(host, log);
            }
            if let Some(change) = c.calico_group().and_then(|g| groups.changed(g)) {
                super::api_group::restart_components(host, change, s.service_stop_wait(), log);
                startup(host, s, env, program, None, stop, log)?;
            }
        }
        if stop.wait(wait) {
            return Err(SuperviseError::Stopped);
        }
    }
}

/// The node's addresses as calico-node's startup last ran with them: the host's stable IPv4
/// addresses and the Node's InternalIP. A change is followed at once, without waiting for
/// kubelet to restart (projectcalico/calico#8700: after a node IP change pods stayed
/// unreachable until calico-node was restarted by hand, since node-service.ps1 reruns it only
/// when kubelet's process changes).
#[derive(Debug, Default)]
pub(super) struct AddressWatch {
    host: Vec<Ipv4Addr>,
    internal: Option<Ipv4Addr>,
}

impl AddressWatch {
    /// The node's Preferred IPv4 addresses but loopback and 169.254/16, sorted: those of the
    /// External vSwitch's host adapter only (`addressing::external_adapter`), whose address
    /// calico-node's startup takes; another adapter's (a second NIC renewing its DHCP lease) is
    /// not the node's, and neither is `Calico_ep`'s, which comes and goes with the pod network.
    fn host_addresses(host: &dyn Host) -> Vec<Ipv4Addr> {
        // The physical adapter under a vSwitch has IPv4 unbound: only the interface table
        // lists it (`uplink::every_adapter`), and the External network's port is found by it.
        let adapters = crate::host::uplink::every_adapter(host).unwrap_or_default();
        let networks = host.hns_networks().unwrap_or_default();
        let kept = addressing::current(host, &networks);
        let ours = addressing::external_adapter(kept.as_ref(), &adapters, &networks);
        let mut out: Vec<Ipv4Addr> = ours
            .iter()
            .flat_map(|a| a.addresses.iter())
            .filter(|x| x.preferred && !x.ip.is_loopback() && !x.ip.is_link_local())
            .map(|x| x.ip)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// What calico-node's startup just ran with (the addresses now); for the tests, which run
    /// on Unix only (`supervise::tests`).
    #[cfg(all(test, unix))]
    pub(super) fn ran(&mut self, host: &dyn Host, internal: Option<Ipv4Addr>) {
        self.ran_with(Self::look(host), internal);
    }

    /// The node's addresses now, for `ran_with` once startup ran.
    pub(super) fn look(host: &dyn Host) -> Vec<Ipv4Addr> {
        Self::host_addresses(host)
    }

    /// What calico-node's startup ran with: the addresses as it began (`look`), so that a
    /// change while it ran is followed at the next look, not taken as what it ran with.
    pub(super) fn ran_with(&mut self, seen: Vec<Ipv4Addr>, internal: Option<Ipv4Addr>) {
        self.host = seen;
        self.internal = internal.or(self.internal);
    }

    /// What changed since, in words: the host's addresses (not while it has none: an address
    /// being renewed), or the Node's InternalIP (one first read is taken, not a change).
    pub(super) fn changed(
        &mut self,
        host: &dyn Host,
        internal: Option<Ipv4Addr>,
    ) -> Option<String> {
        let show = |v: &[Ipv4Addr]| {
            v.iter()
                .map(Ipv4Addr::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let now = Self::host_addresses(host);
        if !now.is_empty() && !self.host.is_empty() && now != self.host {
            return Some(format!(
                "the node's addresses changed from {} to {}",
                show(&self.host),
                show(&now)
            ));
        }
        match (self.internal, internal) {
            (Some(was), Some(is)) if was != is => {
                Some(format!("the Node's InternalIP changed from {was} to {is}"))
            }
            (None, Some(is)) => {
                self.internal = Some(is);
                None
            }
            _ => None,
        }
    }
}

/// Says that the node's address changed and calico-node's startup runs again for it: in the
/// log and, as information, in the Application event log.
fn follow_address(host: &dyn Host, log: &Log, what: &str) {
    let line = format!(
        "{what}: running calico-node startup again, so that the Calico Node's BGP address follows; pods made before keep the old provider address until 'calicoctl-win repair' recreates them"
    );
    log.info(&line);
    if let Err(e) = host.report_event(
        crate::layout::EVENT_SOURCE,
        crate::host::EventLevel::Information,
        crate::layout::EVENT_ADDRESS_CHANGED,
        &format!("CalicoNode: {line}"),
    ) {
        log.warn(&format!("cannot write to the Application event log: {e}"));
    }
}

/// The start-up and, when kubelet runs, one successful calico-node startup (a few attempts):
/// what starting CalicoNode does on a simulated host.
pub fn start_phase(host: &dyn Host, s: &Settings, log: &Log) -> Result<StartPhase> {
    let env = environment(host, s)?;
    let program = required(host, s, Component::Startup)?;
    let stop = Stop::new();
    let phase = init(host, s, &env, &stop, log)?;
    if host.process_pid("kubelet.exe")?.is_some() {
        startup(
            host,
            s,
            &env,
            &program,
            Some(START_PHASE_ATTEMPTS),
            &stop,
            log,
        )?;
        super::cni::release(host, &env, log)?;
    } else {
        log.info("kubelet is not running; calico-node startup runs when it starts");
    }
    Ok(phase)
}

/// Steps 1–6: boot detection, HNS clean-up after a boot, a usable address, the External
/// network and its management IP, routes, RemoteAccess, and the init-done marker. A failure
/// is recorded where install's wait reads it (`failure`), so the wait ends with it.
pub fn init(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    stop: &Stop,
    log: &Log,
) -> Result<StartPhase> {
    failure::clear(host)?;
    let out = init_steps(host, s, env, stop, log);
    if let Err(e) = &out
        && !matches!(e, SuperviseError::Stopped)
    {
        report_failure(
            host,
            NODE,
            "initialise",
            &crate::error::chain(e),
            Blocks::Init,
            log,
        );
    }
    out
}

fn init_steps(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    stop: &Stop,
    log: &Log,
) -> Result<StartPhase> {
    let facts = host.system_facts()?;
    // Neither a new boot (which deletes every pod's network) nor the same one (which keeps a
    // network a real reboot left in an unknown state) is guessed: init stops and says so.
    let Some(boot) = facts.boot_id.clone() else {
        return Err(SuperviseError::UnknownBoot);
    };
    let stored = stored_boot(host)?;
    let mut phase = StartPhase {
        first_run_since_boot: stored.as_deref() != Some(boot.as_str()),
        ..StartPhase::default()
    };
    log.info(&format!(
        "boot {boot} (last initialised in boot {}): {}",
        stored.as_deref().unwrap_or("none"),
        if phase.first_run_since_boot {
            "first run since boot"
        } else {
            "restarted in the same boot"
        }
    ));
    if phase.first_run_since_boot {
        // After a power loss nothing withheld it at shutdown.
        super::cni::withhold(host, env, "first start in this boot", log)?;
    }
    let backend = env
        .get(EnvVars::CALICO_NETWORKING_BACKEND)
        .map_or("vxlan", String::as_str);
    if matches!(backend, "vxlan" | "windows-bgp") {
        prepare_networks(host, s, env, stop, log, &mut phase)?;
    } else {
        log.info(&format!("backend {backend}: no HNS networks to prepare"));
    }
    // The legacy marker as Calico's scripts compare it: the boot as Windows reports it now.
    write_marker(host, &boot, facts.boot_local_reported())?;
    log.info("initialisation done; felix and confd may start");
    Ok(phase)
}

/// The networks of a vxlan or windows-bgp node made ready for calico-node: after a boot the
/// stale ones deleted, the external vSwitch made (the routes it took put back), the metadata
/// route, RemoteAccess for BGP.
fn prepare_networks(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    stop: &Stop,
    log: &Log,
    phase: &mut StartPhase,
) -> Result<()> {
    let backend = env
        .get(EnvVars::CALICO_NETWORKING_BACKEND)
        .map_or("vxlan", String::as_str);
    super::hns_watch::ensure_running(host, s, log)?;
    // Probe before the vSwitch exists: creating it drops the metadata route.
    let platform = platform_for(host, s, log)?;
    phase.platform = Some(platform);
    let snapshot = routes_before_vswitch(host, phase.first_run_since_boot, log)?;
    if phase.first_run_since_boot {
        phase.deleted_networks = delete_stale_networks(host, s, stop, log)?;
        wait_for_usable_ip(host, s, env, stop, log)?;
    }
    let uplink = ensure_external(host, s, stop, log)?;
    phase.created_external = uplink.is_some();
    let uplink = uplink.flatten();
    // The routes the vSwitch dropped go to its host adapter, found for certain.
    let vnic = match &uplink {
        Some(before) => Some(find_vswitch_adapter(host, s, before, stop, log)?),
        None => None,
    };
    // What the vSwitch lost of the adapter's addressing, back before the wait for the
    // management IP: a host adapter left on DHCP or APIPA (projectcalico/calico#4631) may
    // give HNS no management IP until its static address is back (calico v3.32.1
    // `calico.psm1`, `Wait-ForManagementIP`, waits for one that is not null).
    put_back_addressing(host, log)?;
    let mgmt = wait_for_management_ip(host, s, stop, log)?;
    if let Some(u) = uplink.as_ref().filter(|u| u.ip != mgmt) {
        log.warn(&format!(
            "the vSwitch's management IP is {mgmt}, not {}, the address {} had before: pods get {mgmt} as their provider address",
            u.ip, u.name
        ));
    }
    if phase.created_external {
        log.info(&format!(
            "giving the networking stack {:?} to settle",
            s.timing.settle
        ));
        if stop.wait(s.timing.settle) {
            return Err(SuperviseError::Stopped);
        }
        phase.restored_routes = restore_routes(host, &snapshot, (mgmt, vnic), log)?;
    } else if host.reg_get(CALICO_KEY, ROUTES_VALUE)?.is_some() {
        // A start before this one created the vSwitch and stopped before restoring, or could
        // not restore them all.
        phase.restored_routes = restore_routes(host, &snapshot, (mgmt, None), log)?;
    }
    let now = host.routes()?;
    if snapshot
        .iter()
        .all(|r| crate::installed::routes::has_destination(&now, r))
    {
        host.reg_delete_value(CALICO_KEY, ROUTES_VALUE)?;
    } else {
        log.info("the routes not restored stay in the registry; the next start tries them again");
    }
    if platform.needs_metadata_route() {
        ensure_metadata_route(host, mgmt, log)?;
    }
    if backend == "windows-bgp" {
        restart_remote_access(host, s, log)?;
    }
    Ok(())
}

/// What the vSwitch dropped of its adapter's addressing (static address, DHCP off, DNS servers
/// and suffix, metric), found right after it was made and put back once (`addressing`); never
/// what changed since. A record of a network that is gone is dropped.
fn put_back_addressing(host: &dyn Host, log: &Log) -> Result<()> {
    let Some(mut kept) = addressing::recorded(host) else {
        return Ok(());
    };
    let networks = host.hns_networks()?;
    let boot = host.system_facts()?.boot_id;
    if !kept.belongs(&networks, boot.as_deref()) {
        log.info(&format!(
            "the addressing of {} kept from before the vSwitch belongs to an External network that is gone: dropped",
            kept.adapter
        ));
        addressing::forget(host)?;
        return Ok(());
    }
    if kept.lost.is_some() && kept.pending.is_empty() {
        return Ok(());
    }
    if kept.network.is_none() {
        kept.network = networks
            .iter()
            .find(|n| n.name == EXTERNAL_NETWORK)
            .map(|n| n.id.clone());
    }
    let adapters = host.adapters()?;
    let Some(now) = kept.host_adapter(&adapters) else {
        log.info(&format!(
            "the vSwitch's host adapter for {} is not there: its addressing is left as it is",
            kept.adapter
        ));
        return Ok(());
    };
    let (done, failed) = addressing::put_back(host, &mut kept, now);
    for d in done {
        log.info(&format!("{}: {d}", now.name));
    }
    for f in failed {
        log.warn(&format!("{}: {f}", now.name));
    }
    addressing::record(host, &kept)?;
    Ok(())
}

/// `Calico_ep`'s interface metric kept above the LAN's host adapter's, once calico-node made
/// it (projectcalico/calico#4664).
fn keep_ep_metric(host: &dyn Host, log: &Log) {
    let networks = host.hns_networks().unwrap_or_default();
    let Some(before) = addressing::current(host, &networks) else {
        return;
    };
    let Ok(adapters) = host.adapters() else {
        return;
    };
    let Some(lan) = before.host_adapter(&adapters) else {
        return;
    };
    if let Some(ep) = addressing::ep_metric_clash(&adapters, lan) {
        let metric = lan.metric + addressing::EP_METRIC_ABOVE;
        match host.set_interface_metric(ep.index, metric) {
            Ok(()) => log.info(&format!(
                "{} had the interface metric {}, not above {}'s {}: set to {metric}",
                ep.name, ep.metric, lan.name, lan.metric
            )),
            Err(e) => log.warn(&format!("cannot set {}'s interface metric: {e}", ep.name)),
        }
    }
}

/// The platform: configured, or probed.
fn platform_for(host: &dyn Host, s: &Settings, log: &Log) -> Result<Platform> {
    Ok(match platform::configured(s.platform) {
        Some(p) => {
            log.info(&format!("platform: {p} (node.platform)"));
            p
        }
        None => {
            let p = platform::detect(&host.hns_networks()?, &s.probes);
            log.info(&format!("platform: {p}"));
            p
        }
    })
}

/// The routes before the vSwitch, kept in the registry until they are restored, so that a
/// start cut off between creating the vSwitch and restoring them still knows.
fn routes_before_vswitch(
    host: &dyn Host,
    first_run_since_boot: bool,
    log: &Log,
) -> Result<Vec<Route>> {
    let kept = match host.reg_get(CALICO_KEY, ROUTES_VALUE)? {
        Some(RegValue::Sz(json)) => serde_json::from_str::<Vec<Route>>(&json).ok(),
        _ => None,
    };
    Ok(match kept {
        Some(routes) => routes,
        None => {
            let routes = host.routes()?;
            let external = host
                .hns_networks()?
                .iter()
                .any(|n| n.name == EXTERNAL_NETWORK);
            // After a boot the networks are deleted and the vSwitch made again.
            if !external || first_run_since_boot {
                match serde_json::to_string(&routes) {
                    Ok(json) => host.reg_set(CALICO_KEY, ROUTES_VALUE, &RegValue::Sz(json))?,
                    Err(e) => log.warn(&format!(
                        "cannot keep the routes before the vSwitch in the registry ({e}); they are restored only if this start finishes"
                    )),
                }
            }
            routes
        }
    })
}

fn is_ours(n: &HnsNetwork, all_non_nat: bool) -> bool {
    if all_non_nat {
        return !n.network_type.eq_ignore_ascii_case("nat");
    }
    n.name == "Calico" || n.name.starts_with("Calico-") || n.name == EXTERNAL_NETWORK
}

/// After a boot the networks are in an unknown state: delete Calico's own (or every non-NAT
/// network with `delete_all_non_nat_networks`) and check that they are gone.
fn delete_stale_networks(
    host: &dyn Host,
    s: &Settings,
    stop: &Stop,
    log: &Log,
) -> Result<Vec<String>> {
    let started = Instant::now();
    let mut deleted = Vec::new();
    loop {
        let stale: Vec<HnsNetwork> = host
            .hns_networks()?
            .into_iter()
            .filter(|n| is_ours(n, s.delete_all_non_nat_networks))
            .collect();
        if stale.is_empty() {
            return Ok(deleted);
        }
        if started.elapsed() >= s.network_timeout {
            return Err(SuperviseError::NetworksRemain {
                names: stale
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                after: s.network_timeout,
            });
        }
        let mut failed = false;
        for n in &stale {
            match host.hns_delete_network(&n.id) {
                Ok(()) | Err(HostError::NotFound { .. }) => {
                    log.info(&format!(
                        "first run since boot: deleted HNS network {} ({})",
                        n.name, n.id
                    ));
                    deleted.push(n.name.clone());
                }
                Err(e) => {
                    log.warn(&format!("could not delete HNS network {}: {e}", n.name));
                    failed = true;
                }
            }
        }
        if failed && stop.wait(s.timing.poll) {
            return Err(SuperviseError::Stopped);
        }
    }
}

fn wait_for_usable_ip(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    let limit = env
        .get(EnvVars::STARTUP_VALID_IP_TIMEOUT)
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(90), Duration::from_secs);
    let started = Instant::now();
    let mut said = false;
    loop {
        let addrs = host.ipv4_addresses()?;
        if let Some(a) = addrs
            .iter()
            .find(|a| !a.ip.is_loopback() && !a.ip.is_link_local() && !a.ip.is_unspecified())
        {
            log.info(&format!("usable IPv4 address {} on {}", a.ip, a.interface));
            return Ok(());
        }
        if started.elapsed() >= limit {
            return Err(SuperviseError::NoUsableIp {
                waited: limit,
                seen: addrs
                    .iter()
                    .map(|a| format!("{} on {}", a.ip, a.interface))
                    .collect(),
            });
        }
        if !said {
            log.info(&format!(
                "waiting up to {limit:?} for a usable IPv4 address (not 127/8 or 169.254/16)"
            ));
            said = true;
        }
        if stop.wait(s.timing.ip_poll) {
            return Err(SuperviseError::Stopped);
        }
    }
}

/// Creates the External network from the rendered document unless it exists; retries with
/// backoff up to the network timeout. `None` when it existed; else the adapter it binds as
/// it was before (`None` inside when the document names none and HNS picks).
fn ensure_external(
    host: &dyn Host,
    s: &Settings,
    stop: &Stop,
    log: &Log,
) -> Result<Option<Option<Uplink>>> {
    if host
        .hns_networks()?
        .iter()
        .any(|n| n.name == EXTERNAL_NETWORK)
    {
        return Ok(None);
    }
    let path = s.path(crate::layout::EXTERNAL_FILE);
    let spec = host
        .read_file(&path)?
        .ok_or(SuperviseError::NoExternalSpec { path })?;
    let spec = String::from_utf8_lossy(&spec);
    let named = serde_json::from_str(&spec)
        .ok()
        .and_then(|d| crate::host::hns::document_adapter(&d));
    let uplink = match named {
        Some(name) => Some(wait_for_stable_address(host, s, &name, stop, log)?),
        None => None,
    };
    log.info("creating the External HNS network: this creates the vSwitch, and remote desktop may drop for a few seconds");
    let started = Instant::now();
    let mut backoff = Backoff::new(&s.timing);
    loop {
        match host.hns_create_network(&spec) {
            Ok(n) => {
                log.info(&format!("created HNS network External ({})", n.id));
                if uplink.is_some() {
                    addressing::key_to(host, &n.id)?;
                }
                return Ok(Some(uplink));
            }
            Err(HostError::Exists { .. }) => return Ok(None),
            Err(e) => {
                let left = s.network_timeout.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(SuperviseError::ExternalNetwork {
                        after: s.network_timeout,
                        last: crate::error::chain(&e),
                    });
                }
                let d = backoff.next().min(left);
                log.warn(&format!(
                    "could not create the External network: {}; retrying in {d:?}",
                    crate::error::chain(&e)
                ));
                if stop.wait(d) {
                    return Err(SuperviseError::Stopped);
                }
            }
        }
    }
}

/// The adapter the vSwitch is made on, as it was just before: its name, MAC and the stable
/// address it held.
#[derive(Clone, Debug)]
pub(super) struct Uplink {
    pub(super) name: String,
    pub(super) mac: String,
    pub(super) ip: Ipv4Addr,
    /// On DHCP: its host adapter gets an address from DHCP, never from what was kept.
    pub(super) dhcp: bool,
}

impl Uplink {
    /// Whether `a` is the vSwitch's host adapter made on it: a vSwitch port with its MAC, a
    /// `vEthernet` name, and its address; any one alone is not enough.
    pub(super) fn is_its_vswitch_adapter(&self, a: &crate::host::Adapter) -> bool {
        self.is_its_vswitch_adapter_but_address(a) && a.holds(self.ip)
    }

    /// Its host adapter by MAC and name (`uplink::is_host_adapter_of`), whatever it holds.
    pub(super) fn is_its_vswitch_adapter_but_address(&self, a: &crate::host::Adapter) -> bool {
        crate::host::uplink::is_host_adapter_of(a, &self.name, &self.mac)
    }
}

/// Waits until the adapter the External network binds holds a Preferred IPv4 address that is
/// not 169.254/16: a vSwitch made on a tentative or APIPA address keeps it as the node's
/// provider address (Azure/AgentBaker 6e2dbb2a24 added the same wait to AKS's
/// `azurecnifunc.ps1`).
fn wait_for_stable_address(
    host: &dyn Host,
    s: &Settings,
    name: &str,
    stop: &Stop,
    log: &Log,
) -> Result<Uplink> {
    let started = Instant::now();
    let mut said = false;
    loop {
        let adapters = host.adapters()?;
        let adapter = adapters.iter().find(|a| a.name.eq_ignore_ascii_case(name));
        if let Some(a) = adapter
            && let Some(x) = a.stable_address()
        {
            log.info(&format!(
                "{} holds {} (Preferred): making the vSwitch on it",
                a.name, x.ip
            ));
            // What the vSwitch may lose of it, kept to be put back (`addressing`).
            let boot = host.system_facts()?.boot_id;
            addressing::record(host, &addressing::Addressing::of(a).taken_in(boot))?;
            return Ok(Uplink {
                name: a.name.clone(),
                mac: a.mac.clone(),
                ip: x.ip,
                dhcp: a.dhcp,
            });
        }
        if started.elapsed() >= s.adapter_address_timeout {
            let seen = adapter.map_or_else(
                || vec![format!("no adapter named {name}")],
                |a| {
                    a.addresses
                        .iter()
                        .map(|x| {
                            let state = if x.preferred { "" } else { " (tentative)" };
                            format!("{}{state}", x.ip)
                        })
                        .collect()
                },
            );
            return Err(SuperviseError::AdapterAddress {
                adapter: name.to_owned(),
                waited: s.adapter_address_timeout,
                seen,
            });
        }
        if !said {
            log.info(&format!(
                "waiting up to {:?} for {name} to hold a stable IPv4 address (Preferred, not 169.254/16) before making the vSwitch on it",
                s.adapter_address_timeout
            ));
            said = true;
        }
        if stop.wait(s.timing.ip_poll) {
            return Err(SuperviseError::Stopped);
        }
    }
}

/// The vSwitch's host adapter for `uplink`, found by its address, the uplink's MAC and its
/// `vEthernet` name together, never by the name alone (antrea `pkg/agent/util/net_windows.go`,
/// `adapterIPExists`); its interface index.
fn find_vswitch_adapter(
    host: &dyn Host,
    s: &Settings,
    uplink: &Uplink,
    stop: &Stop,
    log: &Log,
) -> Result<u32> {
    let started = Instant::now();
    loop {
        let found = adapters_now(host)?
            .into_iter()
            .find(|a| uplink.is_its_vswitch_adapter(a));
        if let Some(a) = found {
            log.info(&format!(
                "the vSwitch's host adapter is {} (index {}, MAC {}, {})",
                a.name, a.index, a.mac, uplink.ip
            ));
            return Ok(a.index);
        }
        // A static adapter's address may not come over at all (projectcalico/calico#4631):
        // its host adapter, known by MAC and name, gets it back from what was kept.
        if !uplink.dhcp
            && let Some(a) = adapters_now(host)?
                .into_iter()
                .find(|a| uplink.is_its_vswitch_adapter_but_address(a))
        {
            log.warn(&format!(
                "the vSwitch's host adapter {} (index {}, MAC {}) does not hold {}: the static address did not come over, and is put back",
                a.name, a.index, a.mac, uplink.ip
            ));
            return Ok(a.index);
        }
        if started.elapsed() >= s.network_timeout {
            return Err(SuperviseError::VswitchAdapter {
                uplink: uplink.name.clone(),
                mac: uplink.mac.clone(),
                ip: uplink.ip,
                after: s.network_timeout,
            });
        }
        if stop.wait(s.timing.poll) {
            return Err(SuperviseError::Stopped);
        }
    }
}

fn adapters_now(host: &dyn Host) -> Result<Vec<crate::host::Adapter>> {
    Ok(host.adapters()?)
}

fn wait_for_management_ip(
    host: &dyn Host,
    s: &Settings,
    stop: &Stop,
    log: &Log,
) -> Result<Ipv4Addr> {
    let started = Instant::now();
    let mut said = false;
    loop {
        let ip = host
            .hns_networks()?
            .into_iter()
            .find(|n| n.name == EXTERNAL_NETWORK)
            .and_then(|n| n.management_ip)
            .and_then(|ip| ip.parse::<Ipv4Addr>().ok());
        if let Some(ip) = ip {
            log.info(&format!("management IP on the vSwitch: {ip}"));
            return Ok(ip);
        }
        if started.elapsed() >= s.network_timeout {
            return Err(SuperviseError::ManagementIp {
                after: s.network_timeout,
            });
        }
        if !said {
            log.info(&format!(
                "waiting up to {:?} for the vSwitch's management IP",
                s.network_timeout
            ));
            said = true;
        }
        if stop.wait(s.timing.poll) {
            return Err(SuperviseError::Stopped);
        }
    }
}

/// Adds back the routes of the snapshot that creating the vSwitch dropped; a route whose
/// interface went away moves to the vSwitch's host adapter (`vnic`, found by address, MAC
/// and name; else the one holding the management IP).
fn restore_routes(
    host: &dyn Host,
    snapshot: &[Route],
    (mgmt, vnic): (Ipv4Addr, Option<u32>),
    log: &Log,
) -> Result<Vec<String>> {
    let now = host.routes()?;
    let addrs = host.ipv4_addresses()?;
    let vswitch = vnic.or_else(|| addrs.iter().find(|a| a.ip == mgmt).map(|a| a.index));
    let mut restored = Vec::new();
    for r in snapshot {
        let present = now
            .iter()
            .any(|x| x.destination == r.destination && x.prefix_len == r.prefix_len);
        if present {
            continue;
        }
        let what = format!("{}/{} via {}", r.destination, r.prefix_len, r.next_hop);
        let index = if addrs.iter().any(|a| a.index == r.interface_index) {
            r.interface_index
        } else if let Some(i) = vswitch {
            i
        } else {
            report_failure(
                host,
                NODE,
                &format!("restore the route {what} that the vSwitch dropped"),
                &format!("no interface holds the management IP {mgmt}"),
                Blocks::Route(format!("{}/{}", r.destination, r.prefix_len)),
                log,
            );
            continue;
        };
        let route = Route {
            interface_index: index,
            ..r.clone()
        };
        match host.add_route(&route) {
            Ok(()) | Err(HostError::Exists { .. }) => {
                log.info(&format!("restored route {what} that the vSwitch dropped"));
                restored.push(what);
            }
            Err(e) => report_failure(
                host,
                NODE,
                &format!("restore the route {what} that the vSwitch dropped"),
                &e.to_string(),
                Blocks::Route(format!("{}/{}", r.destination, r.prefix_len)),
                log,
            ),
        }
    }
    Ok(restored)
}

/// EC2 and GCE: the metadata service must stay reachable through the vSwitch.
fn ensure_metadata_route(host: &dyn Host, mgmt: Ipv4Addr, log: &Log) -> Result<()> {
    let present = host
        .routes()?
        .iter()
        .any(|r| r.destination == METADATA && r.prefix_len == 32);
    if present {
        return Ok(());
    }
    let Some(index) = host
        .ipv4_addresses()?
        .iter()
        .find(|a| a.ip == mgmt)
        .map(|a| a.index)
    else {
        report_failure(
            host,
            NODE,
            &format!("add the metadata route {METADATA}/32"),
            &format!("no interface holds the management IP {mgmt}"),
            Blocks::Route(format!("{METADATA}/32")),
            log,
        );
        return Ok(());
    };
    let route = Route {
        destination: METADATA,
        prefix_len: 32,
        next_hop: Ipv4Addr::UNSPECIFIED,
        interface_index: index,
        metric: 256,
    };
    match host.add_route(&route) {
        Ok(()) | Err(HostError::Exists { .. }) => log.info(&format!(
            "added the metadata route {METADATA}/32 on interface {index}"
        )),
        Err(e) => report_failure(
            host,
            NODE,
            &format!("add the metadata route {METADATA}/32"),
            &e.to_string(),
            Blocks::Route(format!("{METADATA}/32")),
            log,
        ),
    }
    Ok(())
}

/// windows-bgp: RemoteAccess picks up the renumbered interfaces only when restarted.
fn restart_remote_access(host: &dyn Host, s: &Settings, log: &Log) -> Result<()> {
    let name = "RemoteAccess";
    if host.service_query(name)?.is_none() {
        return Err(SuperviseError::RemoteAccess(HostError::NotFound {
            what: format!("service {name}"),
        }));
    }
    log.info("restarting RemoteAccess so that BGP picks up the renumbered interfaces");
    host.service_stop(name, s.network_timeout)
        .and_then(|()| host.service_start(name, s.network_timeout))
        .map_err(SuperviseError::RemoteAccess)
}

fn write_marker(host: &dyn Host, boot: &str, boot_local_seconds: Option<i64>) -> Result<()> {
    host.reg_set(CALICO_KEY, BOOT_ID_VALUE, &RegValue::Sz(boot.to_owned()))?;
    if let Some(local) = boot_local_seconds {
        host.reg_set(
            CALICO_KEY,
            LEGACY_BOOT_VALUE,
            &RegValue::Sz(crate::installed::boot_marker::legacy_value(host, local)?),
        )?;
    }
    Ok(())
}

/// Runs calico-node startup until it succeeds (or `max_attempts`), with backoff.
fn startup(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    program: &Launch,
    max_attempts: Option<u32>,
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    let mut backoff = Backoff::new(&s.timing);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let last = match run_child(host, s, program, env, Some(s.startup_timeout), stop, log) {
            Ok(ChildEnd::Exited(0)) => {
                log.info("calico-node startup finished");
                return Ok(());
            }
            Ok(ChildEnd::Exited(code)) => format!("exit code {code}"),
            Ok(ChildEnd::TimedOut) => {
                format!("still running after {:?}, stopped", s.startup_timeout)
            }
            Err(SuperviseError::Stopped) => return Err(SuperviseError::Stopped),
            Err(e) => crate::error::chain(&e),
        };
        if max_attempts.is_some_and(|m| attempts >= m) {
            return Err(SuperviseError::Startup { attempts, last });
        }
        let d = backoff.next();
        log.warn(&format!(
            "calico-node startup failed ({last}); retrying in {d:?}"
        ));
        if stop.wait(d) {
            return Err(SuperviseError::Stopped);
        }
    }
}
