//! CalicoNode's HNS restart watchdog: after an HNS restart, Felix and kube-proxy program from
//! stale state until restarted (projectcalico/calico#5164). As AKS does (Azure/AgentBaker
//! `staging/cse/windows/provisioningscripts/hnsremediator.ps1`), a change of HNS's process id
//! restarts CalicoFelix and kube-proxy once, said in the log, an event and `HnsRestart`. The
//! id last seen is kept in the registry (`HnsProcess`, with its boot).

use super::log::Log;
use super::settings::Settings;
use super::settings::SuperviseError;
use crate::duration::{Look, Pauses, Stop, Stopped};
use crate::host::services::{send_stop_again, stop_undelivered};
use crate::host::{ERROR_SERVICE_REQUEST_TIMEOUT, ServiceState};
use crate::host::{EventLevel, Host, HostError, RegValue};
pub use crate::installed::hns_restart::{self, HnsRestart};
use crate::layout::{CALICO_KEY, HNS_PID_VALUE, Role};
use std::time::{Duration, Instant};

/// The Application event id of an HNS restart CalicoNode answered (listed in `layout`).
pub use crate::layout::EVENT_HNS_RESTARTED;

/// The HNS service's name (`Get-Service hns`: "Host Network Service").
pub const HNS_SERVICE: &str = "hns";

/// HNS's process id as last seen.
#[derive(Debug, Default)]
pub struct HnsWatch {
    last: Option<u32>,
    /// Whether the id kept in the registry was read (once, at the first look).
    loaded: bool,
}

/// Starts the Host Network Service unless it runs, before CalicoNode makes its networks: it is
/// demand-start and no dependency of ours (`service_spec`). An unregistered one is left alone.
pub fn ensure_running(host: &dyn Host, s: &Settings, log: &Log) -> crate::host::HostResult<()> {
    let Some(state) = host.service_query(HNS_SERVICE)?.map(|q| q.state) else {
        log.warn(&format!(
            "no service {HNS_SERVICE} (the Host Network Service) is registered: going on with what HNS answers"
        ));
        return Ok(());
    };
    if state == ServiceState::Running {
        return Ok(());
    }
    log.info(&format!(
        "the Host Network Service is {}: starting it before making the networks",
        format!("{state:?}").to_ascii_lowercase()
    ));
    host.service_start(HNS_SERVICE, s.network_timeout)
}

/// The id kept for this boot (`<boot id>:<pid>`); one of another boot, or none, is no id.
fn kept_pid(host: &dyn Host) -> Option<u32> {
    let boot = host.system_facts().ok()?.boot_id?;
    let text = crate::installed::calico_text(host, HNS_PID_VALUE).ok()??;
    let (b, pid) = text.split_once(':')?;
    (b == boot).then(|| pid.parse().ok()).flatten()
}

impl HnsWatch {
    /// Looks at HNS's process id; after a change between running processes, restarts the
    /// services that program HNS. A stop during the restart leaves the new id unkept.
    pub fn check(
        &mut self,
        host: &dyn Host,
        s: &Settings,
        stop: &Stop,
        log: &Log,
    ) -> Result<Option<HnsRestart>, Stopped> {
        let pid = match host.service_query(HNS_SERVICE) {
            Ok(Some(svc)) => svc.pid,
            Ok(None) => return Ok(None),
            Err(e) => {
                log.warn(&format!("cannot read the HNS service: {e}"));
                return Ok(None);
            }
        };
        let Some(pid) = pid else { return Ok(None) };
        if !self.loaded {
            self.loaded = true;
            self.last = kept_pid(host);
        }
        let previous = self.last.replace(pid);
        let restart = match previous {
            Some(previous) if previous != pid => {
                log.info(&format!(
                    "the HNS service restarted (process {previous} -> {pid}): it has forgotten its policies; restarting the services that program it"
                ));
                // When the restart was seen (status shows it), not when the restarts ended.
                let at = crate::duration::now();
                let wait = s.service_stop_wait();
                let after = " after the HNS restart";
                let each = restart_each(host, &Role::PROGRAMS_HNS, wait, after, stop, log);
                let (restarted, failed) = each.map_err(|name| {
                    log.warn(&format!(
                        "the HNS restart is not answered: CalicoNode is stopping ({name} may be left stopped; the next start answers it)"
                    ));
                    Stopped
                })?;
                Some(HnsRestart {
                    at,
                    from_pid: previous,
                    to_pid: pid,
                    restarted,
                    failed,
                })
            }
            _ => None,
        };
        // Kept with its boot (`kept_pid`).
        if previous != Some(pid)
            && let Some(boot) = host.system_facts().ok().and_then(|f| f.boot_id)
        {
            let id = RegValue::Sz(format!("{boot}:{pid}"));
            let kept = host.reg_set(CALICO_KEY, HNS_PID_VALUE, &id);
            log.failed("cannot keep the HNS process id", kept);
        }
        if let Some(r) = &restart {
            record(host, r, log);
            super::renew::count(host, crate::installed::metrics::HNS_RESTARTS, log);
        }
        Ok(restart)
    }
}

/// Restarts each registered service of `roles` (`restart`; a stop taken after it was given up
/// on counts), each said with `after`: those restarted, and those not with why; a stop ends it
/// at the service it was restarting (`Err`, its name).
pub fn restart_each(
    host: &dyn Host,
    roles: &[Role],
    wait: Duration,
    after: &str,
    stop: &Stop,
    log: &Log,
) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut restarted, mut failed) = (Vec::new(), Vec::new());
    for role in roles {
        let name = role.service_name();
        if !matches!(host.service_query(name), Ok(Some(_))) {
            continue;
        }
        match restart(host, name, wait, stop, log) {
            Ok(()) => log.info(&format!("restarted {name}{after}")),
            Err(SuperviseError::Stopped) => return Err(name.to_owned()),
            Err(e)
                if matches!(e, SuperviseError::StopGivenUp(_))
                    && started_late(host, name, wait, stop, log) =>
            {
                log.info(&format!(
                    "restarted {name}{after}: its stop was taken after it was given up on ({e})"
                ));
            }
            Err(e) => {
                log.warn(&format!("cannot restart {name}{after}: {e}"));
                failed.push(format!("{name}: {e}"));
                continue;
            }
        }
        restarted.push(name.to_owned());
    }
    Ok((restarted, failed))
}

/// Stops `name`, waiting up to twice `wait`, and starts it once Stopped. The stop is sent
/// again at each look, so CalicoNode's own stop ends the wait at once.
///
/// ERROR_SERVICE_REQUEST_TIMEOUT (1053) is a stop still pending, sent again while the time
/// left holds another send (the SCM delivers one control at a time: Microsoft,
/// "ControlService function (winsvc.h)", Remarks).
pub fn restart(
    host: &dyn Host,
    name: &str,
    wait: Duration,
    stop: &Stop,
    log: &Log,
) -> Result<(), SuperviseError> {
    let most = wait.saturating_mul(2);
    let started = Instant::now();
    let mut undelivered = 0_u32;
    log.poll_until(
        (&format!("{name} to stop"), most, Pauses::every(Duration::from_millis(100))),
        stop,
        || {
            let sent = Instant::now();
            match host.service_stop(name, Duration::ZERO) {
                Ok(()) => Ok(Look::Done(())),
                Err(e @ HostError::Timeout { .. }) => Ok(Look::Pending(e)),
                Err(e) if e.os_code() == Some(ERROR_SERVICE_REQUEST_TIMEOUT) => {
                    undelivered += 1;
                    if undelivered == 1 {
                        log.info(&format!(
                            "the Service Control Manager could not deliver the stop to {name} (os error 1053 after {}s; it waits up to ServicesPipeTimeout while any service is busy with a control): sending it again while the {most:?} allowed for the stop hold another send",
                            sent.elapsed().as_secs()
                        ));
                    }
                    let refused = stop_undelivered(name, undelivered, started.elapsed());
                    let left = most.saturating_sub(started.elapsed());
                    if send_stop_again(sent.elapsed(), left) {
                        Ok(Look::Pending(refused))
                    } else {
                        Err(refused.into())
                    }
                }
                Err(e) => Err(SuperviseError::from(e)),
            }
        },
        |e| {
            Err(match e {
                HostError::Timeout { what, .. } => HostError::Timeout { what, after: most },
                e => e,
            }
            .into())
        },
    )
    .map_err(|e| match e {
        SuperviseError::Host(h) if stop_given_up(&h) => SuperviseError::StopGivenUp(h),
        e => e,
    })?;
    if stop.requested() {
        return Err(SuperviseError::Stopped);
    }
    Ok(host.service_start(name, wait)?)
}

/// Whether `restart` gave up on the stop (1053 or past its bound), which may still be taken.
pub(super) fn stop_given_up(e: &HostError) -> bool {
    matches!(e, HostError::Timeout { .. }) || e.os_code() == Some(ERROR_SERVICE_REQUEST_TIMEOUT)
}

/// After a restart given up on, whether `name` was started all the same: a late-delivered
/// stop is waited for up to `wait`, then the service started.
fn started_late(host: &dyn Host, name: &str, wait: Duration, stop: &Stop, log: &Log) -> bool {
    let settled = log.poll_until(
        (
            &format!("{name} to settle after its stop was given up on"),
            wait,
            Pauses::every(Duration::from_millis(100)),
        ),
        stop,
        || match host.service_query(name) {
            Ok(Some(s)) if s.state == ServiceState::Stopped => Ok(Look::Done(true)),
            // Running: the stop may still be delivered within the wait.
            Ok(Some(s)) if matches!(s.state, ServiceState::StopPending | ServiceState::Running) => {
                Ok(Look::Pending(()))
            }
            Ok(_) => Ok(Look::Done(false)),
            Err(e) => Err(SuperviseError::from(e)),
        },
        |()| Ok(false),
    );
    matches!(settled, Ok(true)) && !stop.requested() && host.service_start(name, wait).is_ok()
}

/// The restart in the Application event log and in `HnsRestart`.
fn record(host: &dyn Host, r: &HnsRestart, log: &Log) {
    let mut message = format!(
        "The HNS service restarted (process {} -> {}); CalicoNode restarted {}",
        r.from_pid,
        r.to_pid,
        if r.restarted.is_empty() {
            "nothing".to_owned()
        } else {
            r.restarted.join(", ")
        }
    );
    if !r.failed.is_empty() {
        message.push_str(&format!("; could not restart {}", r.failed.join("; ")));
    }
    let level = if r.failed.is_empty() {
        EventLevel::Warning
    } else {
        EventLevel::Error
    };
    log.event(host, level, EVENT_HNS_RESTARTED, &message);
    log.failed("cannot record the HNS restart", hns_restart::keep(host, r));
}
