//! CalicoNode's start-up: boot detection, the networks, the marker, calico-node's startup.

use super::routes::{NODE, keep_routes, routes_before_vswitch};
use super::vswitch::{
    delete_stale_networks, ensure_external, find_vswitch_adapter, put_back_addressing,
    wait_for_management_ip,
};
use crate::duration::{Look, NO_LIMIT, Pauses, Stop};
use crate::host::{Host, HostError, RegValue};
use crate::installed::boot_marker::stored_boot;
use crate::installed::failure::{self, Blocks};
use crate::installed::platform::{self, Platform};
use crate::layout::env::EnvVars;
use crate::layout::{BOOT_ID_VALUE, CALICO_KEY, LEGACY_BOOT_VALUE};
use crate::supervise::child::{ChildEnd, report_failure, run_child};
use crate::supervise::log::Log;
use crate::supervise::settings::{
    Component, Launch, Result, Settings, SuperviseError, environment, required,
};
use std::collections::BTreeMap;
use std::time::Duration;

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

/// What starting CalicoNode does on a simulated host: the start-up and one calico-node startup.
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
        crate::supervise::cni::release(host, &env, log)?;
    } else {
        log.info("kubelet is not running; calico-node startup runs when it starts");
    }
    Ok(phase)
}

/// Steps 1–6: boot detection, HNS clean-up, a usable address, the External network, routes,
/// RemoteAccess, the init-done marker. A failure is recorded for install's wait (`failure`).
pub(super) fn init(
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
    // An unknown boot is not guessed either way: init stops and says so.
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
        crate::supervise::cni::withhold(host, env, "first start in this boot", log)?;
    }
    let backend = crate::supervise::settings::backend(env);
    if matches!(backend, "vxlan" | "windows-bgp") {
        prepare_networks(host, s, env, stop, log, &mut phase)?;
    } else {
        log.info(&format!("backend {backend}: no HNS networks to prepare"));
    }
    host.reg_set(CALICO_KEY, BOOT_ID_VALUE, &RegValue::Sz(boot))?;
    // The legacy marker as Calico's scripts compare it: the boot as Windows reports it now.
    if let Some(local) = facts.boot_local_reported() {
        let legacy = crate::installed::boot_marker::legacy_value(host, local)?;
        host.reg_set(CALICO_KEY, LEGACY_BOOT_VALUE, &RegValue::Sz(legacy))?;
    }
    log.info("initialisation done; felix and confd may start");
    Ok(phase)
}

/// A vxlan or windows-bgp node's networks made ready: stale ones deleted after a boot, the
/// vSwitch made and its routes put back, the metadata route, RemoteAccess for BGP.
fn prepare_networks(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    stop: &Stop,
    log: &Log,
    phase: &mut StartPhase,
) -> Result<()> {
    let backend = crate::supervise::settings::backend(env);
    crate::supervise::hns_watch::ensure_running(host, s, log)?;
    // Probe before the vSwitch exists: creating it drops the metadata route.
    let platform = platform_for(host, s, log)?;
    phase.platform = Some(platform);
    let snapshot = routes_before_vswitch(host, phase.first_run_since_boot)?;
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
    // The static addressing the vSwitch lost, back before the management IP wait
    // (projectcalico/calico#4631; v3.32.1 `calico.psm1`, `Wait-ForManagementIP`).
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
    }
    phase.restored_routes = keep_routes(
        host,
        &snapshot,
        (mgmt, vnic),
        phase.created_external,
        platform.needs_metadata_route(),
        log,
    )?;
    if backend == "windows-bgp" {
        restart_remote_access(host, s, log)?;
    }
    Ok(())
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
    let look = || -> Result<Look<(), Vec<String>>> {
        let addrs = host.ipv4_addresses()?;
        if let Some(a) = addrs
            .iter()
            .find(|a| !a.ip.is_loopback() && !a.ip.is_link_local() && !a.ip.is_unspecified())
        {
            log.info(&format!("usable IPv4 address {} on {}", a.ip, a.interface));
            return Ok(Look::Done(()));
        }
        Ok(Look::Pending(
            addrs
                .iter()
                .map(|a| format!("{} on {}", a.ip, a.interface))
                .collect(),
        ))
    };
    let wait = (
        "a usable IPv4 address (not 127/8 or 169.254/16)",
        limit,
        Pauses::every(s.timing.ip_poll),
    );
    log.poll_until(wait, stop, look, |seen| {
        Err(SuperviseError::NoUsableIp {
            waited: limit,
            seen,
        })
    })
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

/// Runs calico-node startup until it succeeds or `max_attempts` failed, with backoff. An
/// earlier startup still running (`EarlierStillRuns`) is not a failed attempt.
pub(super) fn startup(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    program: &Launch,
    max_attempts: Option<u32>,
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    let pauses = Pauses {
        first: s.timing.backoff_min,
        most: s.timing.backoff_max,
    };
    let mut attempts = 0;
    log.poll_until(
        ("calico-node startup to succeed", NO_LIMIT, pauses),
        stop,
        || {
            let last = match run_child(host, s, program, env, Some(s.startup_timeout), stop, log) {
                Ok(ChildEnd::Exited(0)) => {
                    log.info("calico-node startup finished");
                    return Ok(Look::Done(()));
                }
                Ok(ChildEnd::Exited(code)) => format!("exit code {code}"),
                Ok(ChildEnd::TimedOut) => {
                    format!("still running after {:?}, stopped", s.startup_timeout)
                }
                Err(SuperviseError::Stopped) => return Err(SuperviseError::Stopped),
                // A startup that could not be stopped is not run again beside itself.
                Err(e @ SuperviseError::NotStopped { .. }) => return Err(e),
                Err(e @ SuperviseError::EarlierStillRuns { .. }) => {
                    if max_attempts.is_some() {
                        return Err(e);
                    }
                    let d = pauses.after(attempts.max(1));
                    log.warn(&format!(
                        "calico-node startup did not run ({e}); looking again in {d:?}"
                    ));
                    return Ok(Look::Again((attempts, e.to_string()), d));
                }
                Err(e) => crate::error::chain(&e),
            };
            attempts += 1;
            if max_attempts.is_some_and(|m| attempts >= m) {
                return Err(SuperviseError::Startup { attempts, last });
            }
            let d = pauses.after(attempts);
            log.warn(&format!(
                "calico-node startup failed ({last}); retrying in {d:?}"
            ));
            Ok(Look::Pending((attempts, last)))
        },
        |(attempts, last)| Err(SuperviseError::Startup { attempts, last }),
    )
}
