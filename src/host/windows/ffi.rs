//! UTF-16 strings in and out, and whether this is Wine.

/// Whether this is Wine rather than Windows: Wine's ntdll exports `wine_get_version`.
pub fn is_wine() -> bool {
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
