//! CalicoFelix and CalicoConfd (`felix-service.ps1`, `confd-service.ps1`).

use super::child::{ChildEnd, run_child};
use super::log::Log;
use super::node::init_done;
use super::settings::{
    Component, Launch, Result, Settings, SuperviseError, backend, environment, required,
};
use crate::duration::{Look, NO_LIMIT, Pauses, Stop};
use crate::host::Host;
use crate::layout::Role;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Felix exits with 129 to reload its configuration: run it again at once.
const FELIX_RELOAD_EXIT: i32 = 129;
/// confd's generated files, deleted before it starts so that it always reconfigures BGP.
const CONFD_GENERATED: [&str; 2] = ["peerings.ps1", "blocks.ps1"];

pub fn felix(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    let env = environment(host, s)?;
    let felix = required(host, s, Component::Felix)?;
    wait_for_init(host, s, stop, log)?;
    supervise(host, s, &felix, &env, Some(FELIX_RELOAD_EXIT), stop, log)
}

pub fn confd(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    let env = environment(host, s)?;
    let backend = backend(&env);
    if backend != "windows-bgp" {
        log.info(&format!(
            "confd runs only with the windows-bgp backend (this node: {backend}); idle until stopped"
        ));
        while !stop.wait(Duration::from_secs(3600)) {}
        return Err(SuperviseError::Stopped);
    }
    let confd = required(host, s, Component::Confd)?;
    wait_for_init(host, s, stop, log)?;
    clear_generated(host, s, log)?;
    supervise(host, s, &confd, &env, None, stop, log)
}

/// The checks felix and confd make before they would run, for the simulated service start.
pub fn start_phase(host: &dyn Host, s: &Settings, log: &Log) -> Result<()> {
    let env = environment(host, s)?;
    let component = match s.role {
        Role::Confd => Component::Confd,
        _ => Component::Felix,
    };
    if component == Component::Confd && backend(&env) != "windows-bgp" {
        return Ok(());
    }
    required(host, s, component)?;
    if !init_done(host)? {
        return Err(SuperviseError::NotInitialised);
    }
    if component == Component::Confd {
        clear_generated(host, s, log)?;
    }
    log.info("CalicoNode has initialised; the component runs");
    Ok(())
}

fn clear_generated(host: &dyn Host, s: &Settings, log: &Log) -> Result<()> {
    for name in CONFD_GENERATED {
        let path = s.install_root.path(&format!("confd\\{name}"));
        if host.remove_file(&path)? {
            log.info(&format!(
                "removed the stale {path} so that confd reconfigures BGP"
            ));
        }
    }
    Ok(())
}

/// Waits until CalicoNode has initialised in this boot, warning every `init_timeout` but
/// waiting on: felix on networks about to be deleted would be worse.
fn wait_for_init(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    if init_done(host)? {
        return Ok(());
    }
    let boot = host.system_facts()?.boot_id;
    let boot = boot.as_deref().unwrap_or("unknown");
    log.info(&format!(
        "waiting for CalicoNode to finish initialising in this boot ({boot}): \
         {}\\{} does not hold it yet",
        crate::layout::CALICO_KEY,
        crate::layout::BOOT_ID_VALUE
    ));
    let started = Instant::now();
    let mut warned_at = Duration::ZERO;
    log.poll_until(
        ("CalicoNode to finish initialising", NO_LIMIT, Pauses::every(s.timing.poll)),
        stop,
        || {
            if init_done(host)? {
                log.info("CalicoNode finished initialising");
                return Ok(Look::Done(()));
            }
            let waited = started.elapsed();
            if waited >= warned_at + s.init_timeout {
                log.warn(&format!(
                    "CalicoNode has not finished initialising after {:?}; still waiting (see calico-node.log)",
                    Duration::from_secs(waited.as_secs())
                ));
                warned_at = waited;
            }
            Ok(Look::Pending(()))
        },
        // No time limit: the year `poll_until` stands in for it is never reached in practice.
        |()| Err(SuperviseError::Stopped),
    )
}

/// Runs the component until a stop: at once after `reload_exit`, else after a doubling delay.
pub(super) fn supervise(
    host: &dyn Host,
    s: &Settings,
    program: &Launch,
    env: &BTreeMap<String, String>,
    reload_exit: Option<i32>,
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    let pauses = crate::duration::Pauses {
        first: s.timing.backoff_min,
        most: s.timing.backoff_max,
    };
    // Failures in a row: the next delay is `pauses.after(failures)`.
    let mut failures = 0;
    loop {
        let started = Instant::now();
        // Felix's own start, kept where `status` reads it (its service outlives its restarts).
        if s.role == Role::Felix {
            let now = crate::host::RegValue::Sz(crate::duration::now().to_string());
            let value = crate::layout::FELIX_STARTED_VALUE;
            let kept = host.reg_set(crate::layout::CALICO_KEY, value, &now);
            log.failed("cannot record Felix's start", kept);
        }
        let delay = match run_child(host, s, program, env, None, stop, log) {
            Err(SuperviseError::Stopped) => return Err(SuperviseError::Stopped),
            // Restarting beside a child that may still run would make two agents.
            Err(e @ SuperviseError::NotStopped { .. }) => return Err(e),
            Ok(ChildEnd::Exited(code)) if Some(code) == reload_exit => {
                log.info(&format!(
                    "exited with {code} to reload its configuration; restarting now"
                ));
                failures = 0;
                Duration::ZERO
            }
            Ok(ChildEnd::Exited(code)) => {
                if started.elapsed() > s.timing.backoff_max {
                    failures = 0;
                }
                failures += 1;
                let d = pauses.after(failures);
                log.warn(&format!("exited with code {code}; restarting in {d:?}"));
                d
            }
            Ok(ChildEnd::TimedOut) => Duration::ZERO,
            Err(e) => {
                failures += 1;
                let d = pauses.after(failures);
                log.warn(&format!(
                    "could not run {}: {}; retrying in {d:?}",
                    program.program,
                    crate::error::chain(&e)
                ));
                d
            }
        };
        if stop.wait(delay) {
            return Err(SuperviseError::Stopped);
        }
    }
}
