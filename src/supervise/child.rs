//! Running one child under a service body, restarts with back-off, failures said and recorded.

use super::log::Log;
use super::settings::{Launch, Result, Settings, SuperviseError};
use crate::duration::{Look, NO_LIMIT, Pauses, STILL_WAITING, Stop, Wait, poll_until};
use crate::host::{Host, Output, ProcessSpec};
use std::collections::BTreeMap;
use std::time::Duration;

/// How a supervised child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChildEnd {
    Exited(i32),
    /// It ran past its time limit and was stopped.
    TimedOut,
}

/// Runs a child with exactly `env` until it exits, runs past `limit` (`TimedOut`) or a stop.
pub(super) fn run_child(
    host: &dyn Host,
    s: &Settings,
    launch: &Launch,
    env: &BTreeMap<String, String>,
    limit: Option<Duration>,
    stop: &Stop,
    log: &Log,
) -> Result<ChildEnd> {
    let spec = ProcessSpec {
        program: launch.program.clone(),
        args: launch.args.clone(),
        env: env.clone(),
        cwd: launch.cwd.clone(),
        output: Output::Lines(log.sink()),
    };
    earlier(host, s, launch, stop, log)?;
    let mut child = host.spawn(&spec)?;
    log.info(&format!(
        "started {} {} (pid {})",
        launch.program,
        launch.args.join(" "),
        child.pid()
    ));
    let pid = child.pid();
    keep(host, s, pid, log);
    let in_job = child.in_job();
    // A child that runs for good is no wait: its start and end are said, not each look.
    let say = &mut |l: &str| {
        if limit.is_some() || !l.starts_with(STILL_WAITING) {
            log.info(l);
        }
    };
    let wait = Wait {
        what: &format!("{} (pid {pid}) to exit", launch.program),
        timeout: limit.unwrap_or(NO_LIMIT),
        pauses: Pauses::every(s.timing.poll.min(Duration::from_millis(200))),
        stop,
        say,
    };
    // Done with its exit code; `None` when it ran past its limit.
    let look = || -> Result<Look<Option<i32>, ()>> {
        Ok(match child.wait_timeout(Duration::ZERO)? {
            Some(code) => Look::Done(Some(code)),
            None => Look::Pending(()),
        })
    };
    let not_stopped = |error: crate::host::HostError| SuperviseError::NotStopped {
        program: launch.program.clone(),
        pid,
        error: error.to_string(),
        in_job,
    };
    match poll_until(wait, look, |()| Ok(None)) {
        Ok(Some(code)) => Ok(ChildEnd::Exited(code)),
        Ok(None) => {
            child.stop(s.stop_timeout).map_err(not_stopped)?;
            Ok(ChildEnd::TimedOut)
        }
        Err(SuperviseError::Stopped) => {
            log.info(&format!(
                "stopping pid {pid} (killed if still running after {:?})",
                s.stop_timeout
            ));
            let code = child.stop(s.stop_timeout)?;
            log.info(&format!("pid {pid} ended with exit code {code}"));
            Err(SuperviseError::Stopped)
        }
        // A failed look leaves no child to run beside: one that cannot be stopped ends the service.
        Err(e) => match child.stop(s.stop_timeout) {
            Ok(_) => Err(e),
            Err(stop) => {
                log.info(&format!("could not stop pid {pid} after {e}: {stop}"));
                Err(not_stopped(stop))
            }
        },
    }
}

/// Keeps the child's pid and start in the role's registry value for the next start (`earlier`).
fn keep(host: &dyn Host, s: &Settings, pid: u32, log: &Log) {
    let started = host
        .process_running(pid)
        .flatten()
        .map_or_else(String::new, |t| format!(" {t}"));
    let value = crate::host::RegValue::Sz(format!("{pid}{started}"));
    let kept = host.reg_set(crate::layout::CALICO_KEY, s.role.child_value(), &value);
    log.failed(&format!("cannot record the child's pid {pid}"), kept);
}

/// Before a child starts: one an earlier run kept that still runs as the same process (pid and
/// start) is waited for up to `Timing::earlier_wait`, else the start ends (`EarlierStillRuns`).
fn earlier(host: &dyn Host, s: &Settings, launch: &Launch, stop: &Stop, log: &Log) -> Result<()> {
    let Some(kept) = crate::installed::calico_text(host, s.role.child_value())? else {
        return Ok(());
    };
    // As `keep` writes it: the pid and its start.
    let mut words = kept.split_whitespace();
    let pid = words.next().and_then(|w| w.parse::<u32>().ok());
    let (Some(pid), Some(Ok(started))) = (pid, words.next().map(str::parse::<u64>)) else {
        return Ok(());
    };
    let same = || host.process_running(pid) == Some(Some(started));
    if !same() {
        return Ok(());
    }
    log.warn(&format!(
        "pid {pid}, started by an earlier run of this service, still runs: waiting for it to end before starting {}",
        launch.program
    ));
    log.poll_until(
        (
            &format!("pid {pid} of an earlier run to end"),
            s.timing.earlier_wait,
            Pauses::every(s.timing.poll.min(Duration::from_millis(200))),
        ),
        stop,
        || {
            Ok(if same() {
                Look::Pending(())
            } else {
                Look::Done(())
            })
        },
        |()| {
            Err(SuperviseError::EarlierStillRuns {
                program: launch.program.clone(),
                pid,
                after: s.timing.earlier_wait,
            })
        },
    )
}

/// The event id of a failure CalicoNode records for the waits (listed in `layout`).
pub use crate::layout::EVENT_FAILURE;

/// Says a failure in the log and the event log, and records it for the waits (`failure`).
pub fn report_failure(
    host: &dyn Host,
    service: &str,
    what: &str,
    error: &str,
    blocks: crate::installed::failure::Blocks,
    log: &Log,
) {
    let line = format!("could not {what}: {error}");
    log.warn(&line);
    let message = format!("{service} {line}");
    log.event(
        host,
        crate::host::EventLevel::Warning,
        EVENT_FAILURE,
        &message,
    );
    let failure = crate::installed::failure::Failure {
        service: service.to_owned(),
        what: what.to_owned(),
        error: error.to_owned(),
        blocks,
        at: crate::duration::now(),
    };
    let recorded = crate::installed::failure::record(host, failure);
    log.failed(
        "cannot record the failure where install's wait reads it",
        recorded,
    );
}
