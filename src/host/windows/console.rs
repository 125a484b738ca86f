//! The console's control events as the stop signal (`host::stop`): `SetConsoleCtrlHandler`
//! requests the stop and holds a close, logoff or shutdown (`host::stop::hold`). The handler
//! carries no context, so the stop is a process-wide static, set once.

use crate::duration::Stop as StopSignal;
use std::sync::OnceLock;
use std::time::Duration;
use windows_sys::Win32::Foundation::{FALSE, TRUE};
use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
use windows_sys::core::BOOL;

/// The stop, and how long each event is held.
type Stop = (StopSignal, fn(u32) -> Duration);

static STOP: OnceLock<Stop> = OnceLock::new();

unsafe extern "system" fn handler(event: u32) -> BOOL {
    let Some((stop, hold)) = STOP.get() else {
        return FALSE;
    };
    stop.request();
    std::thread::sleep(hold(event));
    TRUE
}

/// Installs the handler; a second call (one stop a process) is refused.
pub fn on_stop(stop: StopSignal, hold: fn(u32) -> Duration) -> std::io::Result<()> {
    if STOP.set((stop, hold)).is_err() {
        return Err(std::io::Error::other("the stop signal is caught already"));
    }
    // SAFETY: `handler` is an `extern "system"` function that lives as long as the process.
    if unsafe { SetConsoleCtrlHandler(Some(handler), TRUE) } == FALSE {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
