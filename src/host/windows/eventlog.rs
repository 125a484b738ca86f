//! The Application event log: RegisterEventSourceW, ReportEventW, DeregisterEventSource.
//! The source's registration (its key under `...\Services\EventLog\Application`, with the
//! message file the viewer formats the text with) is install's, as registry values.

use super::ffi::wide;
use crate::host::{EventLevel, HostError, HostResult};
use windows_sys::Win32::System::EventLog::{
    DeregisterEventSource, EVENTLOG_ERROR_TYPE, EVENTLOG_INFORMATION_TYPE, EVENTLOG_WARNING_TYPE,
    RegisterEventSourceW, ReportEventW,
};

pub fn report(source: &str, level: EventLevel, id: u32, message: &str) -> HostResult<()> {
    let name = wide(source);
    // SAFETY: a NULL server is the local machine; `name` is NUL-terminated and outlives the
    // call; the handle is deregistered below.
    let handle = unsafe { RegisterEventSourceW(std::ptr::null(), name.as_ptr()) };
    if handle.is_null() {
        return Err(HostError::io(
            format!("open the event source {source}"),
            std::io::Error::last_os_error(),
        ));
    }
    let kind = match level {
        EventLevel::Information => EVENTLOG_INFORMATION_TYPE,
        EventLevel::Warning => EVENTLOG_WARNING_TYPE,
        EventLevel::Error => EVENTLOG_ERROR_TYPE,
    };
    let text = wide(message);
    let strings = [text.as_ptr()];
    // SAFETY: one NUL-terminated string in `strings`, no SID and no raw data; both buffers
    // outlive the call.
    let ok = unsafe {
        ReportEventW(
            handle,
            kind,
            0,
            id,
            std::ptr::null_mut(),
            1,
            0,
            strings.as_ptr(),
            std::ptr::null(),
        )
    };
    let error = std::io::Error::last_os_error();
    // SAFETY: the handle came from RegisterEventSourceW and is deregistered once.
    unsafe { DeregisterEventSource(handle) };
    if ok == 0 {
        return Err(HostError::io(format!("write an event of {source}"), error));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through the real advapi32 (under Wine in CI): an event of each level is accepted, for
    /// a source whether or not it is registered, as on Windows.
    #[test]
    fn events_of_each_level_are_written() {
        for level in [
            EventLevel::Information,
            EventLevel::Warning,
            EventLevel::Error,
        ] {
            report(
                "calicoctl-win-test",
                level,
                1,
                "calicoctl-win event log test",
            )
            .expect("ReportEventW");
        }
    }
}
