//! calicoctl-win.exe's version resource (build.rs), read as Explorer and PowerShell read it:
//! GetFileVersionInfoW and VerQueryValueW from the real version.dll, under Wine in CI.

use super::ffi::wide;
use windows_sys::Win32::Storage::FileSystem::{
    GetFileVersionInfoSizeW, GetFileVersionInfoW, VerQueryValueW,
};

/// The string `name` of the US English, Unicode block of `exe`'s version resource.
fn version_string(exe: &std::path::Path, name: &str) -> Option<String> {
    let path = wide(&exe.display().to_string());
    let mut handle = 0u32;
    // SAFETY: `path` is NUL-terminated; `handle` is an out-parameter.
    let size = unsafe { GetFileVersionInfoSizeW(path.as_ptr(), &mut handle) };
    if size == 0 {
        return None;
    }
    let mut data = vec![0u8; size as usize];
    // SAFETY: `data` holds `size` writable bytes.
    if unsafe { GetFileVersionInfoW(path.as_ptr(), 0, size, data.as_mut_ptr().cast()) } == 0 {
        return None;
    }
    let query = wide(&format!(r"\StringFileInfo\040904b0\{name}"));
    let mut value: *mut core::ffi::c_void = std::ptr::null_mut();
    let mut len = 0u32;
    // SAFETY: `data` is the block GetFileVersionInfoW filled; the answer points into it.
    if unsafe { VerQueryValueW(data.as_ptr().cast(), query.as_ptr(), &mut value, &mut len) } == 0
        || value.is_null()
    {
        return None;
    }
    // SAFETY: `value` is a NUL-terminated UTF-16 string inside `data`, which is alive.
    Some(super::ffi::take_wide(value.cast()))
}

#[test]
fn the_exe_carries_its_version_and_description() {
    // The exe is beside the test binary's deps/.
    let exe = std::env::current_exe()
        .expect("current exe")
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("calicoctl-win.exe"))
        .expect("target dir");
    if !exe.is_file() {
        // Built by tools/wine/test.sh before the tests; a bare `cargo test` does not.
        assert!(
            std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none(),
            "{} was not built",
            exe.display()
        );
        return;
    }
    let get =
        |name| version_string(&exe, name).unwrap_or_else(|| panic!("{name} in {}", exe.display()));
    assert_eq!(get("FileVersion"), env!("CARGO_PKG_VERSION"));
    assert_eq!(get("ProductName"), "calicoctl-win");
    assert_eq!(get("OriginalFilename"), "calicoctl-win.exe");
    assert_eq!(get("FileDescription"), env!("CARGO_PKG_DESCRIPTION"));
    assert!(
        get("ProductVersion").starts_with(&format!("{} (", env!("CARGO_PKG_VERSION"))),
        "{}",
        get("ProductVersion")
    );
}
