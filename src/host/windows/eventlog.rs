//! The Windows event logs: writing to Application (RegisterEventSourceW, ReportEventW) and
//! reading any log (EvtQuery, EvtNext, EvtRender). The source's registration is install's.

use super::ffi::wide;
use crate::host::events::{EventQuery, LoggedEvent};
use crate::host::{EventLevel, HostError, HostResult};
use windows_sys::Win32::Foundation::ERROR_NO_MORE_ITEMS;
use windows_sys::Win32::System::EventLog::{
    DeregisterEventSource, EVENTLOG_ERROR_TYPE, EVENTLOG_INFORMATION_TYPE, EVENTLOG_WARNING_TYPE,
    EVT_HANDLE, EvtClose, EvtNext, EvtQuery, EvtQueryChannelPath, EvtQueryReverseDirection,
    EvtRender, EvtRenderEventXml, RegisterEventSourceW, ReportEventW,
};

/// The newest `max` events that answer `query`, newest first (`EvtQuery` with its XPath,
/// `EvtNext`, each rendered as XML by `EvtRender`, read by `events::parse`).
pub fn read(query: &EventQuery, max: usize) -> HostResult<Vec<LoggedEvent>> {
    let what = format!("the {} event log", query.channel);
    let channel = wide(query.channel);
    let xpath = wide(&query.xpath());
    // SAFETY: a NULL session is the local machine; both strings are NUL-terminated and outlive
    // the call; the handle is closed below.
    let results = unsafe {
        EvtQuery(
            0,
            channel.as_ptr(),
            xpath.as_ptr(),
            EvtQueryChannelPath | EvtQueryReverseDirection,
        )
    };
    if results == 0 {
        return Err(HostError::Unavailable {
            what,
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    let out = next_events(results, max, &what);
    // SAFETY: the handle came from EvtQuery and is closed once.
    unsafe { EvtClose(results) };
    out
}

fn next_events(results: EVT_HANDLE, max: usize, what: &str) -> HostResult<Vec<LoggedEvent>> {
    let mut out = Vec::new();
    while out.len() < max {
        let mut batch = [0 as EVT_HANDLE; 16];
        let mut returned = 0u32;
        // SAFETY: `batch` holds 16 handles; each returned one is closed below.
        let ok = unsafe {
            EvtNext(
                results,
                batch.len() as u32,
                batch.as_mut_ptr(),
                5000,
                0,
                &mut returned,
            )
        };
        if ok == 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(ERROR_NO_MORE_ITEMS as i32) {
                break;
            }
            return Err(HostError::io(format!("read {what}"), e));
        }
        for &event in batch.iter().take(returned as usize) {
            let xml = render(event);
            // SAFETY: an event handle from EvtNext, closed once.
            unsafe { EvtClose(event) };
            if let Some(e) = xml.as_deref().and_then(crate::host::events::parse)
                && out.len() < max
            {
                out.push(e);
            }
        }
    }
    Ok(out)
}

/// An event's XML, at most `MAX_EVENT_XML` bytes; `None` when it cannot be rendered.
fn render(event: EVT_HANDLE) -> Option<String> {
    // Whether it rendered, and the bytes it used or needs.
    let render = |size: usize, buf: *mut u16| {
        let (mut used, mut count) = (0u32, 0u32);
        // SAFETY: `buf` is null (the size asked) or holds `size` bytes, at most that many
        // written.
        let ok = unsafe {
            EvtRender(
                0,
                event,
                EvtRenderEventXml,
                size as u32,
                buf.cast(),
                &mut used,
                &mut count,
            )
        };
        (ok != 0, used as usize)
    };
    let size = render(0, std::ptr::null_mut())
        .1
        .min(crate::host::events::MAX_EVENT_XML);
    if size < 2 {
        return None;
    }
    let mut buf = vec![0u16; size / 2];
    let rendered = render(buf.len() * 2, buf.as_mut_ptr()).0;
    rendered.then(|| super::ffi::wide_until_nul(&buf))
}

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

    /// On real Windows the System log has this boot's 6005, read newest first; under Wine
    /// (no wevtapi queries) the log is unavailable, said as such.
    #[test]
    fn the_system_log_is_read_newest_first() {
        let q = EventQuery {
            channel: "System",
            providers: &["EventLog"],
            ids: &[6005],
        };
        match read(&q, 3) {
            Ok(events) => {
                if crate::host::contract::on_windows::real_host() {
                    assert!(!events.is_empty(), "no 6005 in the System log");
                }
                for e in &events {
                    assert_eq!((e.provider.as_str(), e.id), ("EventLog", 6005), "{e:?}");
                }
                assert!(
                    events.windows(2).all(|w| w[0].time >= w[1].time),
                    "{events:?}"
                );
            }
            Err(e) => {
                assert!(!crate::host::contract::on_windows::real_host(), "{e}");
                assert!(matches!(e, HostError::Unavailable { .. }), "{e}");
            }
        }
    }
}
