//! CalicoNode's HNS restart watchdog. When the Host Network Service restarts (a crash, an
//! update), HNS forgets the policies it held while Felix and kube-proxy keep programming from
//! what they believe HNS has, until they are restarted (projectcalico/calico#5164: pods cannot
//! be reached after an HNS restart). AKS runs a scheduled task for exactly this:
//! Azure/AgentBaker `staging/cse/windows/provisioningscripts/hnsremediator.ps1` reads the `hns`
//! service's process id (`Win32_Service.ProcessId`) and, when it changed, restarts kube-proxy
//! and Calico's services.
//! CalicoNode does the same each time it looks for kubelet: once per change of HNS's process id
//! it restarts CalicoFelix and the kube-proxy service (those registered), with a log line, an
//! Application event and the registry value `HnsRestart` that `status` shows. The process id
//! it last saw is kept in the registry (`HnsProcess`, with the boot it was seen in), so an HNS
//! restart while CalicoNode itself restarts is answered too, and a reboot is not one.
//!
//! A restart waits for each service as long as that service may take to stop
//! (`Settings::service_stop_wait`: CalicoFelix waits its stop timeout before it kills Felix,
//! and tells the SCM so in its wait hint), and starts it once it reaches Stopped: a Felix slow
//! to stop right after an HNS restart once timed the wait out and was never started again.

use super::log::Log;
use super::settings::Settings;
use super::settings::SuperviseError;
use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_until};
use crate::host::services::{send_stop_again, stop_undelivered};
use crate::host::{ERROR_SERVICE_REQUEST_TIMEOUT, ServiceState};
use crate::host::{EventLevel, Host, HostError, RegValue};
pub use crate::installed::hns_restart::{self, HnsRestart};
use crate::layout::{CALICO_KEY, EVENT_SOURCE, HNS_PID_VALUE, Role};
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

/// Starts the Host Network Service unless it runs, before CalicoNode makes its networks: the
/// SCM no longer starts it as a dependency (`service_spec`), and it is demand-start. A host
/// without the service registered is left to HNS's own answer (preflight's `hns` check says
/// what is missing; under Wine the HCN stand-in answers without one).
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
    match host.reg_get(CALICO_KEY, HNS_PID_VALUE) {
        Ok(Some(RegValue::Sz(text))) => {
            let (b, pid) = text.split_once(':')?;
            (b == boot).then(|| pid.parse().ok()).flatten()
        }
        _ => None,
    }
}

fn keep_pid(host: &dyn Host, pid: u32, log: &Log) {
    let Some(boot) = host.system_facts().ok().and_then(|f| f.boot_id) else {
        return;
    };
    if let Err(e) = host.reg_set(
        CALICO_KEY,
        HNS_PID_VALUE,
        &RegValue::Sz(format!("{boot}:{pid}")),
    ) {
        log.warn(&format!("cannot keep the HNS process id: {e}"));
    }
}

impl HnsWatch {
    /// Looks at HNS's process id; after a change from one running process to another, restarts
    /// the services that program HNS and says so. A stopped HNS (no process) is only noted:
    /// the restart is answered once HNS runs again. CalicoNode's stop during the restart ends
    /// it with `Stopped`, and the new process id is then not kept: the next CalicoNode answers
    /// the restart again.
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
                Some(restart_programmers(host, s, previous, pid, stop, log)?)
            }
            _ => None,
        };
        if previous != Some(pid) {
            keep_pid(host, pid, log);
        }
        if let Some(r) = &restart {
            record(host, r, log);
            super::renew::count(host, crate::installed::metrics::HNS_RESTARTS, log);
        }
        Ok(restart)
    }
}

fn restart_programmers(
    host: &dyn Host,
    s: &Settings,
    from_pid: u32,
    to_pid: u32,
    stop: &Stop,
    log: &Log,
) -> Result<HnsRestart, Stopped> {
    let mut out = HnsRestart {
        at: crate::duration::now(),
        from_pid,
        to_pid,
        restarted: Vec::new(),
        failed: Vec::new(),
    };
    for role in Role::PROGRAMS_HNS {
        let name = role.service_name();
        if !matches!(host.service_query(name), Ok(Some(_))) {
            continue;
        }
        match restart(host, name, s.service_stop_wait(), stop, log) {
            Ok(()) => {
                log.info(&format!("restarted {name} after the HNS restart"));
                out.restarted.push(name.to_owned());
            }
            Err(SuperviseError::Stopped) => {
                log.warn(&format!(
                    "the HNS restart is not answered: CalicoNode is stopping ({name} may be left stopped; the next start answers it)"
                ));
                return Err(Stopped);
            }
            Err(e)
                if matches!(e, SuperviseError::StopGivenUp(_))
                    && started_late(host, name, s.service_stop_wait(), stop, log) =>
            {
                log.info(&format!(
                    "restarted {name} after the HNS restart: its stop was taken after it was given up on ({e})"
                ));
                out.restarted.push(name.to_owned());
            }
            Err(e) => {
                log.warn(&format!("cannot restart {name} after the HNS restart: {e}"));
                out.failed.push(format!("{name}: {e}"));
            }
        }
    }
    Ok(out)
}

/// Stops `name`, waiting up to twice `wait` (the service's own stop timeout and hint, then
/// once more as long for a stop still pending), and starts it once it is Stopped. Each look
/// sends the stop again without waiting in the host call (a service still starting refuses
/// it until it runs), so CalicoNode's own stop ends the wait at once with `Stopped`: the body
/// then ends and withholds the CNI config instead of being killed in the middle.
///
/// A send the Service Control Manager could not deliver (ERROR_SERVICE_REQUEST_TIMEOUT, 1053)
/// is a stop still pending, sent again within the same bound: the SCM delivers one control at
/// a time and fails a send after `ServicesPipeTimeout` (30 s by default) while any service is
/// busy with one (Microsoft, "ControlService function (winsvc.h)", Remarks), not only this
/// one, so a later send may be delivered. Such a send itself takes up to those 30 s, which count
/// against the bound: another is sent only while the time left holds one as long
/// (`send_stop_again`), else the restart is given up with the refusal, said once.
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
    poll_until(
        Wait {
            what: &format!("{name} to stop"),
            timeout: most,
            pauses: Pauses::every(Duration::from_millis(100)),
            stop,
            say: &mut |l| log.info(l),
        },
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

/// Whether `restart` failed by giving up on the stop (undelivered, 1053, or not taken within
/// its bound): only then may the stop still be taken late. A start refused, access denied or a
/// service gone (1060, 1061) leaves no stop outstanding, and nothing is waited for.
pub(super) fn stop_given_up(e: &HostError) -> bool {
    matches!(e, HostError::Timeout { .. }) || e.os_code() == Some(ERROR_SERVICE_REQUEST_TIMEOUT)
}

/// After a restart given up on, whether `name` was started all the same: a stop given up on
/// may still be taken (a control the SCM could not deliver in time is run once the busy
/// handler is free), and then nothing would start the service again. It is looked at for up
/// to `wait` more: once Stopped (from StopPending, or already), it is started.
fn started_late(host: &dyn Host, name: &str, wait: Duration, stop: &Stop, log: &Log) -> bool {
    let settled = poll_until(
        Wait {
            what: &format!("{name} to settle after its stop was given up on"),
            timeout: wait,
            pauses: Pauses::every(Duration::from_millis(100)),
            stop,
            say: &mut |l| log.info(l),
        },
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
    if let Err(e) = host.report_event(EVENT_SOURCE, level, EVENT_HNS_RESTARTED, &message) {
        log.warn(&format!("cannot write to the Application event log: {e}"));
    }
    if let Err(e) = hns_restart::keep(host, r) {
        log.warn(&format!("cannot record the HNS restart: {e}"));
    }
}
