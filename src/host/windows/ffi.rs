//! UTF-16 strings in and out, errors, DLLs and tokens, and whether this is Wine.

use crate::host::{HostError, HostResult};
use libloading::os::windows::{Library, Symbol};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::System::LibraryLoader::LOAD_LIBRARY_SEARCH_SYSTEM32;

/// Whether this is Wine rather than Windows: Wine's ntdll exports `wine_get_version`.
pub(crate) fn is_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    let ntdll: Vec<u16> = "ntdll.dll\0".encode_utf16().collect();
    // SAFETY: ntdll is mapped into every process; both names are NUL-terminated and outlive
    // the calls.
    unsafe {
        let module = GetModuleHandleW(ntdll.as_ptr());
        !module.is_null() && GetProcAddress(module, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

/// A NUL-terminated UTF-16 copy of `s`.
pub(crate) fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// Reads a NUL-terminated UTF-16 string (the caller frees it).
pub(crate) fn take_wide(p: *const u16) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: p is a NUL-terminated UTF-16 string from a Windows API.
    let len = (0..).take_while(|&i| unsafe { *p.add(i) } != 0).count();
    // SAFETY: len u16s were just read from p.
    String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A UTF-16 string in a fixed array, up to its NUL (or the whole array).
pub(crate) fn wide_until_nul(w: &[u16]) -> String {
    let end = w.iter().position(|&c| c == 0).unwrap_or(w.len());
    String::from_utf16_lossy(&w[..end])
}

/// A Windows API error (an HRESULT, from windows-rs or windows-registry) with its operation.
pub(crate) fn api(op: impl Into<String>) -> impl FnOnce(windows_result::Error) -> HostError {
    move |e| HostError::Api {
        op: op.into(),
        code: e.code().0 as u32,
        message: e.message(),
    }
}

/// `dll` from System32 only (no planted DLL is loaded), at run time: a missing DLL or export is
/// an error, not an abort at start-up. `why` follows the load's error.
pub(crate) fn system_dll(dll: &str, what: &str, why: &str) -> HostResult<Library> {
    // SAFETY: each is a system DLL whose initialisation has no preconditions.
    unsafe { Library::load_with_flags(dll, LOAD_LIBRARY_SEARCH_SYSTEM32) }.map_err(|e| {
        HostError::Unavailable {
            what: what.into(),
            reason: format!("{dll} cannot be loaded ({e}){why}"),
        }
    })
}

/// The export `name` (NUL-terminated) of `lib`, loaded as `dll`, as a `T`.
///
/// # Safety
/// `T` is the signature the DLL's header documents for `name`.
pub(crate) unsafe fn export<T>(
    lib: &Library,
    dll: &str,
    what: &str,
    name: &[u8],
) -> HostResult<Symbol<T>> {
    // SAFETY: as the caller promises; the symbol is used while `lib` is loaded.
    unsafe { lib.get::<T>(name) }.map_err(|e| HostError::Unavailable {
        what: what.into(),
        reason: format!(
            "{} is missing from {dll}: {e}",
            String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name))
        ),
    })
}

/// This process's token opened with `access`, handed to `f`, closed after; the open's error.
pub(crate) fn with_token<T>(access: u32, f: impl FnOnce(HANDLE) -> T) -> std::io::Result<T> {
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the current process's pseudo-handle needs no closing; token is an out-pointer.
    if unsafe { OpenProcessToken(GetCurrentProcess(), access, &mut token) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let out = f(token);
    // SAFETY: token came from OpenProcessToken above and is closed once.
    unsafe { CloseHandle(token) };
    Ok(out)
}

/// A plain C struct of integers and pointers zeroed, for which all-zero is valid.
pub(crate) fn zeroed<T: Copy>() -> T {
    // SAFETY: only used for such structs (the `Copy` bound keeps out anything with a drop).
    unsafe { std::mem::zeroed() }
}
