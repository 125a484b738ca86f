//! Processes: graceful stop with Ctrl-Break, finding a process by image name.

use crate::host::{HostError, HostResult};
use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
};

/// The creation flag that gives a child its own process group, so Ctrl-Break reaches it alone.
pub const CREATE_NEW_PROCESS_GROUP: u32 =
    windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;

/// Sends Ctrl-Break to a child started with `CREATE_NEW_PROCESS_GROUP`.
pub fn ctrl_break(pid: u32) {
    // SAFETY: no pointers; a failure (no shared console) leaves the kill that follows.
    unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pid) };
}

/// The pid of a running process whose image name is `image` (case-insensitive).
pub fn pid_of(image: &str) -> HostResult<Option<u32>> {
    // SAFETY: a process snapshot, closed below.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(HostError::io(
            "list processes",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: PROCESSENTRY32W is plain data; all-zero is valid.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut found = None;
    // SAFETY: entry has its size set; snap is valid until closed.
    let mut ok = unsafe { Process32FirstW(snap, &mut entry) };
    while ok != 0 {
        let len = entry
            .szExeFile
            .iter()
            .position(|c| *c == 0)
            .unwrap_or(entry.szExeFile.len());
        let name = String::from_utf16_lossy(&entry.szExeFile[..len]);
        if name.eq_ignore_ascii_case(image) {
            found = Some(entry.th32ProcessID);
            break;
        }
        // SAFETY: as above.
        ok = unsafe { Process32NextW(snap, &mut entry) };
    }
    // SAFETY: snap was created above and is not used after this.
    unsafe { CloseHandle(snap) };
    Ok(found)
}
