//! The stop signal: what sets it, and how long a console control event may be held so that a
//! stopped run deletes what it made. On Windows a console's handler that returns from
//! `CTRL_CLOSE_EVENT`, `CTRL_LOGOFF_EVENT` or `CTRL_SHUTDOWN_EVENT` ends the process there
//! and then; the handler may hold the event instead, about 5 s for a close (Microsoft's
//! `HandlerRoutine` documentation), and `CTRL_SHUTDOWN_EVENT` is also how a HostProcess
//! container's process is told to stop (microsoft/hcsshim `internal/signals/signal.go`,
//! SIGTERM as `CtrlShutdown`; `internal/jobcontainers/process.go` `Signal`), before the
//! kubelet's grace period (30 s by default) ends in a kill.

use crate::duration::Stop;
use std::time::Duration;

/// `CTRL_C_EVENT`, `CTRL_BREAK_EVENT`, `CTRL_CLOSE_EVENT`, `CTRL_LOGOFF_EVENT`,
/// `CTRL_SHUTDOWN_EVENT` (wincon.h).
pub const EVENTS: [u32; 5] = [0, 1, 2, 5, 6];

/// How long the handler holds `event` before it returns (and the process ends): none for
/// Ctrl-C and Ctrl-Break, after which the process goes on and stops by itself; within the 5 s
/// a console's close leaves; longer for a logoff or a shutdown (a container's stop). A run
/// stopped cuts the API call in flight and gives its clean-up, every call included, at most
/// `verify::run::STOPPED_CLEANUP_WAIT` (3 s; `tests/cluster/verify_bounds.rs`), and
/// the process ends as soon as the command returns, the hold or not. Under the fleet's
/// `cmd.exe /c`, hcsshim terminates the container's job 5 s after it sends the shutdown
/// (docs/commands/fleet.md, "Stopping the pods"): the hold is cut there.
pub fn hold(event: u32) -> Duration {
    match event {
        0 | 1 => Duration::ZERO,
        2 => Duration::from_millis(4500),
        _ => Duration::from_secs(15),
    }
}

/// Requests `stop` on the stop signal: Ctrl-C or a termination signal (`ctrlc`); on Windows
/// every console control event, the close, logoff and shutdown held (`hold`). An error says
/// why the signal cannot be caught (a process catches it once).
pub fn on_stop(stop: Stop) -> Result<(), String> {
    #[cfg(windows)]
    {
        super::windows::console::on_stop(stop, hold).map_err(|e| e.to_string())
    }
    #[cfg(not(windows))]
    {
        ctrlc::set_handler(move || stop.request()).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_is_held_within_its_five_seconds_and_ctrl_c_not_at_all() {
        assert_eq!(hold(0), Duration::ZERO);
        assert_eq!(hold(1), Duration::ZERO);
        assert!(hold(2) > Duration::from_secs(3) && hold(2) < Duration::from_secs(5));
        assert!(hold(6) > hold(2) && hold(6) < Duration::from_secs(30));
        assert_eq!(hold(5), hold(6));
    }
}
