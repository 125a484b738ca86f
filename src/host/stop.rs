//! The stop signal, and how long a console control event may be held so a stopped run deletes
//! what it made (Microsoft's `HandlerRoutine`: about 5 s for a close; microsoft/hcsshim
//! `internal/signals/signal.go` sends a container's SIGTERM as `CtrlShutdown`).

use crate::duration::Stop;
use std::time::Duration;

/// `CTRL_C_EVENT` to `CTRL_SHUTDOWN_EVENT` (wincon.h).
pub const EVENTS: [u32; 5] = [0, 1, 2, 5, 6];

/// How long the handler holds `event`: none for Ctrl-C and Ctrl-Break, within 5 s for a
/// close, longer for a logoff or shutdown; the process ends once the command returns.
pub fn hold(event: u32) -> Duration {
    match event {
        0 | 1 => Duration::ZERO,
        2 => Duration::from_millis(4500),
        _ => Duration::from_secs(15),
    }
}

/// Requests `stop` on Ctrl-C or a termination signal (`ctrlc`); on Windows every console
/// control event, close, logoff and shutdown held (`hold`).
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
