//! System facts: the build from RtlGetVersion and the registry, the UBR, elevation from the
//! process token, the boot time from the kernel.

use super::ffi::{take_wide, with_token, zeroed};
use super::registry;
use crate::host::{HostError, HostResult, RegValue, SystemFacts, SystemProxy};
use windows_sys::Wdk::System::SystemInformation::{
    NtQuerySystemInformation, SystemTimeOfDayInformation,
};
use windows_sys::Wdk::System::SystemServices::RtlGetVersion;
use windows_sys::Win32::Foundation::{GlobalFree, LocalFree};
use windows_sys::Win32::Networking::WinHttp::{
    WINHTTP_ACCESS_TYPE_NAMED_PROXY, WINHTTP_PROXY_INFO, WinHttpGetDefaultProxyConfiguration,
};
use windows_sys::Win32::Security::Authorization::ConvertSidToStringSidW;
use windows_sys::Win32::Security::{
    GetTokenInformation, TOKEN_ELEVATION, TOKEN_QUERY, TOKEN_USER, TokenElevation, TokenUser,
};
use windows_sys::Win32::System::SystemInformation::{
    GetNativeSystemInfo, OSVERSIONINFOW, PROCESSOR_ARCHITECTURE_AMD64,
    PROCESSOR_ARCHITECTURE_ARM64, SYSTEM_INFO,
};

const CURRENT_VERSION: &str = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion";

pub fn facts() -> HostResult<SystemFacts> {
    let text = |name: &str| match registry::get(CURRENT_VERSION, name) {
        Ok(Some(RegValue::Sz(s))) => Some(s),
        _ => None,
    };
    let build = rtl_build()
        .or_else(|| text("CurrentBuild")?.parse().ok())
        .ok_or_else(|| HostError::Refused {
            what: "read the Windows build".into(),
            reason: "neither RtlGetVersion nor CurrentBuild answered".into(),
        })?;
    let ubr = match registry::get(CURRENT_VERSION, "UBR") {
        Ok(Some(RegValue::Dword(v))) => Some(v),
        _ => None,
    };
    let boot = boot_time();
    Ok(SystemFacts {
        build,
        ubr,
        product_name: text("ProductName"),
        edition: text("EditionID"),
        installation_type: text("InstallationType"),
        is_64bit: is_64bit(),
        elevated: elevated()?,
        boot_id: boot.and_then(|(b, _, _)| b).map(|(utc, _)| utc.to_string()),
        boot_local_seconds: boot.and_then(|(b, _, _)| b).map(|(_, local)| local),
        boot_local_seconds_reported: boot.and_then(|(_, reported, _)| reported),
        boot_local_seconds_dated: boot
            .and_then(|(_, _, ticks)| local_by_date_rule(ticks))
            .map(crate::host::boot::unix),
        // What hostname.exe prints (config.ps1's `$(hostname)`): the DNS host name.
        hostname: gethostname::gethostname().into_string().ok(),
        winhttp_proxy: winhttp_proxy()?,
        user_sid: user_sid(),
        drives: drives(),
    })
}

/// Every drive letter in use and its type.
fn drives() -> std::collections::BTreeMap<char, crate::host::DriveKind> {
    use crate::host::DriveKind;
    use windows_sys::Win32::Storage::FileSystem::{GetDriveTypeW, GetLogicalDrives};
    // SAFETY: no arguments; returns a bitmask of the letters in use.
    let mask = unsafe { GetLogicalDrives() };
    (0..26u8)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| {
            let letter = char::from(b'A' + i);
            let root = super::ffi::wide(&format!("{letter}:\\"));
            // SAFETY: root is a NUL-terminated wide string alive for the call.
            let kind = match unsafe { GetDriveTypeW(root.as_ptr()) } {
                2 => DriveKind::Removable,
                3 => DriveKind::Fixed,
                4 => DriveKind::Remote,
                5 => DriveKind::CdRom,
                6 => DriveKind::RamDisk,
                _ => DriveKind::Unknown,
            };
            (letter, kind)
        })
        .collect()
}

/// The SID of the process's user, as a string; `None` when it cannot be read.
fn user_sid() -> Option<String> {
    // TOKEN_USER and the SID after it; 256 bytes hold any SID.
    let mut buf = [0u64; 32];
    let mut len = 0u32;
    // SAFETY: buf is writable for the size given and aligned for TOKEN_USER.
    let read = |token| unsafe {
        GetTokenInformation(
            token,
            TokenUser,
            buf.as_mut_ptr().cast(),
            std::mem::size_of_val(&buf) as u32,
            &mut len,
        )
    };
    if with_token(TOKEN_QUERY, read).ok()? == 0 {
        return None;
    }
    // SAFETY: GetTokenInformation filled buf with a TOKEN_USER.
    let sid = unsafe { (*buf.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: sid points into buf, alive here; text is freed with LocalFree below.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return None;
    }
    let out = take_wide(text);
    // SAFETY: text came from ConvertSidToStringSidW and is not used after this.
    unsafe { LocalFree(text.cast()) };
    Some(out)
}

/// The machine's WinHTTP proxy, as `netsh winhttp set proxy` left it.
pub fn winhttp_proxy() -> HostResult<Option<SystemProxy>> {
    let mut info: WINHTTP_PROXY_INFO = zeroed();
    // SAFETY: info is a writable WINHTTP_PROXY_INFO; its strings are freed below.
    if unsafe { WinHttpGetDefaultProxyConfiguration(&mut info) } == 0 {
        return Err(HostError::io(
            "read the WinHTTP proxy (WinHttpGetDefaultProxyConfiguration)",
            std::io::Error::last_os_error(),
        ));
    }
    // The strings are GlobalAlloc'd by WinHTTP and the caller's to free.
    let take = |p: *mut u16| -> Option<String> {
        if p.is_null() {
            return None;
        }
        let s = take_wide(p);
        // SAFETY: p came from WinHTTP's GlobalAlloc and is freed once.
        unsafe { GlobalFree(p.cast()) };
        Some(s)
    };
    let proxy = take(info.lpszProxy);
    let bypass = take(info.lpszProxyBypass);
    Ok(match proxy {
        Some(proxy)
            if info.dwAccessType == WINHTTP_ACCESS_TYPE_NAMED_PROXY && !proxy.trim().is_empty() =>
        {
            Some(SystemProxy { proxy, bypass })
        }
        _ => None,
    })
}

fn rtl_build() -> Option<u32> {
    let mut v: OSVERSIONINFOW = zeroed();
    v.dwOSVersionInfoSize = std::mem::size_of::<OSVERSIONINFOW>() as u32;
    // SAFETY: v is a properly sized OSVERSIONINFOW with its size field set.
    let status = unsafe { RtlGetVersion(&mut v) };
    (status >= 0).then_some(v.dwBuildNumber)
}

fn is_64bit() -> bool {
    let mut info: SYSTEM_INFO = zeroed();
    // SAFETY: info is a writable SYSTEM_INFO.
    unsafe { GetNativeSystemInfo(&mut info) };
    // SAFETY: GetNativeSystemInfo fills the processor-architecture variant of the union.
    let arch = unsafe { info.Anonymous.Anonymous.wProcessorArchitecture };
    arch == PROCESSOR_ARCHITECTURE_AMD64 || arch == PROCESSOR_ARCHITECTURE_ARM64
}

fn elevated() -> HostResult<bool> {
    let mut elevation = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut len = 0u32;
    // SAFETY: the buffer is a TOKEN_ELEVATION of the size given.
    let read = |token| match unsafe {
        GetTokenInformation(
            token,
            TokenElevation,
            (&mut elevation as *mut TOKEN_ELEVATION).cast(),
            std::mem::size_of::<TOKEN_ELEVATION>() as u32,
            &mut len,
        )
    } {
        0 => Err(std::io::Error::last_os_error()),
        _ => Ok(()),
    };
    with_token(TOKEN_QUERY, read)
        .map_err(|e| HostError::io("open the process token", e))?
        .map_err(|e| HostError::io("read the token elevation", e))?;
    Ok(elevation.TokenIsElevated != 0)
}

/// SYSTEM_TIMEOFDAY_INFORMATION (winternl.h); not in the metadata windows-sys is built from.
#[derive(Clone, Copy)]
#[repr(C)]
struct TimeOfDay {
    boot_time: i64,
    current_time: i64,
    time_zone_bias: i64,
    time_zone_id: u32,
    reserved: u32,
    boot_time_bias: u64,
    sleep_time_bias: u64,
}

/// The boot time in seconds since the Unix epoch (the same in every culture and time zone)
/// and the same instant on the local wall clock, unmoved by clock steps; and the local boot
/// time as Windows reports it now, moved by them.
type Boot = (Option<(i64, i64)>, Option<i64>, i64);

fn boot_time() -> Option<Boot> {
    let mut t: TimeOfDay = zeroed();
    let mut len = 0u32;
    // SAFETY: the buffer is a TimeOfDay of the size given; the class fills that layout.
    let status = unsafe {
        NtQuerySystemInformation(
            SystemTimeOfDayInformation,
            (&mut t as *mut TimeOfDay).cast(),
            std::mem::size_of::<TimeOfDay>() as u32,
            &mut len,
        )
    };
    // BootTime moves with every clock step; BootTime - BootTimeBias does not (host::boot).
    if status < 0 {
        return None;
    }
    Some((
        crate::host::boot::boot_instant(t.boot_time, t.boot_time_bias, t.time_zone_bias),
        crate::host::boot::reported_local(t.boot_time, t.time_zone_bias),
        t.boot_time,
    ))
}

/// A UTC time in FILETIME ticks on the local wall clock by that year's time zone rule
/// (`GetTimeZoneInformationForYear`, `SystemTimeToTzSpecificLocalTime`; Wine 8 aborts in the
/// `Ex` form).
fn local_by_date_rule(utc_ticks: i64) -> Option<i64> {
    use windows_sys::Win32::Foundation::{FILETIME, SYSTEMTIME};
    use windows_sys::Win32::System::Time::{
        FileTimeToSystemTime, GetTimeZoneInformationForYear, SystemTimeToFileTime,
        SystemTimeToTzSpecificLocalTime, TIME_ZONE_INFORMATION,
    };
    let ft = FILETIME {
        dwLowDateTime: utc_ticks as u32,
        dwHighDateTime: (utc_ticks >> 32) as u32,
    };
    let mut utc: SYSTEMTIME = zeroed();
    let mut local: SYSTEMTIME = zeroed();
    let mut zone: TIME_ZONE_INFORMATION = zeroed();
    let mut out: FILETIME = zeroed();
    // SAFETY: each pointer is to a local of the type the function reads or fills; a null
    // dynamic zone asks for the current one.
    let ok = unsafe {
        FileTimeToSystemTime(&ft, &mut utc) != 0
            && GetTimeZoneInformationForYear(utc.wYear, std::ptr::null(), &mut zone) != 0
            && SystemTimeToTzSpecificLocalTime(&zone, &utc, &mut local) != 0
            && SystemTimeToFileTime(&local, &mut out) != 0
    };
    ok.then(|| (i64::from(out.dwHighDateTime) << 32) | i64::from(out.dwLowDateTime))
}
