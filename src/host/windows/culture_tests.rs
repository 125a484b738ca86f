//! The boot marker's "G" format (`installed::boot_marker::Culture::general`) against Windows'
//! GetDateFormatEx and GetTimeFormatEx, with SYSTEM's settings from `HKEY_USERS\.DEFAULT`.

use super::ffi::{take_wide, wide};
use crate::host::{RegValue, Registry};
use crate::installed::boot_marker::{Culture, SYSTEM_INTERNATIONAL, system_culture};
use windows_sys::Win32::Foundation::SYSTEMTIME;
use windows_sys::Win32::Globalization::{GetDateFormatEx, GetTimeFormatEx};

fn system_time(unix: i64) -> SYSTEMTIME {
    let t = jiff::Timestamp::from_second(unix)
        .expect("time")
        .to_zoned(jiff::tz::TimeZone::UTC)
        .datetime();
    let w = |v: i64| u16::try_from(v).expect("fits");
    SYSTEMTIME {
        wYear: w(t.year().into()),
        wMonth: w(t.month().into()),
        wDayOfWeek: 0,
        wDay: w(t.day().into()),
        wHour: w(t.hour().into()),
        wMinute: w(t.minute().into()),
        wSecond: w(t.second().into()),
        wMilliseconds: 0,
    }
}

/// Windows' formatting of `picture` (`date`: GetDateFormatEx, else GetTimeFormatEx).
fn nls(locale: &str, picture: &str, t: &SYSTEMTIME, date: bool) -> String {
    let (locale, picture) = (wide(locale), wide(picture));
    let mut out = vec![0u16; 128];
    // SAFETY: the strings are NUL-terminated; `out` holds 128 writable units.
    let n = unsafe {
        if date {
            GetDateFormatEx(
                locale.as_ptr(),
                0,
                t,
                picture.as_ptr(),
                out.as_mut_ptr(),
                128,
                std::ptr::null(),
            )
        } else {
            GetTimeFormatEx(
                locale.as_ptr(),
                0,
                t,
                picture.as_ptr(),
                out.as_mut_ptr(),
                128,
            )
        }
    };
    assert!(n > 0, "NLS could not format {picture:?}");
    // The function wrote a NUL-terminated string into `out`.
    take_wide(out.as_ptr())
}

#[test]
fn the_general_format_is_windows_own_for_each_culture() {
    // 2009-06-15 13:45:30 (.NET's example), the same day at 00:05:30, and 2026-01-02 09:07:08.
    let instants = [1_245_073_530, 1_245_024_330, 1_767_344_828];
    for (locale, date, time) in [
        ("en-US", "M/d/yyyy", "h:mm:ss tt"),
        ("en-GB", "dd/MM/yyyy", "HH:mm:ss"),
        ("de-DE", "dd.MM.yyyy", "HH:mm:ss"),
        ("fr-FR", "dd/MM/yyyy", "HH:mm:ss"),
        ("ja-JP", "yyyy/MM/dd", "H:mm:ss"),
    ] {
        let c = Culture::known(locale).expect("known");
        assert_eq!((c.short_date.as_str(), c.long_time.as_str()), (date, time));
        for unix in instants {
            let t = system_time(unix);
            let windows = format!(
                "{} {}",
                nls(locale, date, &t, true),
                nls(locale, time, &t, false)
            );
            assert_eq!(
                c.general(unix).expect("formats"),
                windows,
                "{locale} {unix}"
            );
        }
    }
}

#[test]
fn system_culture_is_read_from_hkey_users_default() {
    if std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none() {
        // On a real node the test would change SYSTEM's regional settings.
        return;
    }
    let host = super::WindowsHost::new();
    for (k, v) in [
        ("LocaleName", "de-DE"),
        ("sShortDate", "dd.MM.yyyy"),
        ("sTimeFormat", "HH:mm:ss"),
    ] {
        host.reg_set(SYSTEM_INTERNATIONAL, k, &RegValue::Sz(v.into()))
            .expect("set");
    }
    let c = system_culture(&host).expect("read").expect("known");
    assert_eq!(c.general(1_245_073_530).expect("g"), "15.06.2009 13:45:30");
}
