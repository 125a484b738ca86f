//! Processes: graceful stop with Ctrl-Break, finding a process by image name.

use crate::host::{HostError, HostResult};
use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::PROCESS_QUERY_LIMITED_INFORMATION;

/// The creation flag that gives a child its own process group, so Ctrl-Break reaches it alone.
pub const CREATE_NEW_PROCESS_GROUP: u32 =
    windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;

/// A job object whose processes end when its last handle closes
/// (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`): a crashed service host leaves no orphan child.
pub struct KillOnCloseJob(HANDLE);

// SAFETY: a job handle may be used from any thread.
unsafe impl Send for KillOnCloseJob {}
// SAFETY: AssignProcessToJobObject on one handle from several threads is allowed.
unsafe impl Sync for KillOnCloseJob {}

impl KillOnCloseJob {
    pub fn new() -> std::io::Result<Self> {
        use windows_sys::Win32::System::JobObjects::{
            CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
            JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
            SetInformationJobObject,
        };
        // SAFETY: no name, default security.
        let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if job.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        let job = Self(job);
        let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = super::ffi::zeroed();
        info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: info is the struct of the class named, with its size.
        let ok = unsafe {
            SetInformationJobObject(
                job.0,
                JobObjectExtendedLimitInformation,
                (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(job)
    }

    /// Puts a just-started child in the job (its own children follow it there).
    pub fn assign(&self, child: &std::process::Child) -> std::io::Result<()> {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
        // SAFETY: both handles are open: the job's, and the child's owned by `child`.
        if unsafe { AssignProcessToJobObject(self.0, child.as_raw_handle()) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for KillOnCloseJob {
    fn drop(&mut self) {
        // SAFETY: the handle came from CreateJobObjectW and is closed once.
        unsafe { CloseHandle(self.0) };
    }
}

/// This process's job: made once, kept until the process ends.
pub fn service_job() -> Option<&'static KillOnCloseJob> {
    static JOB: std::sync::OnceLock<Option<KillOnCloseJob>> = std::sync::OnceLock::new();
    JOB.get_or_init(|| KillOnCloseJob::new().ok()).as_ref()
}

/// Sends Ctrl-Break to a child started with `CREATE_NEW_PROCESS_GROUP`.
pub fn ctrl_break(pid: u32) {
    // SAFETY: no pointers; a failure (no shared console) leaves the kill that follows.
    unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pid) };
}

/// Process `pid` opened with `access`, handed to `f`, closed after; the open's error.
fn with_process<T>(pid: u32, access: u32, f: impl FnOnce(HANDLE) -> T) -> std::io::Result<T> {
    use windows_sys::Win32::System::Threading::OpenProcess;
    // SAFETY: no pointers; the handle is closed below.
    let handle = unsafe { OpenProcess(access, 0, pid) };
    if handle.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    let out = f(handle);
    // SAFETY: the handle came from OpenProcess above and is closed once.
    unsafe { CloseHandle(handle) };
    Ok(out)
}

/// The open process's creation time in FILETIME ticks (100 ns since 1601-01-01).
fn created(handle: HANDLE) -> std::io::Result<u64> {
    use windows_sys::Win32::System::Threading::GetProcessTimes;
    let zero: FILETIME = super::ffi::zeroed();
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: four FILETIMEs owned by this frame; the handle is the caller's, open.
    if unsafe { GetProcessTimes(handle, &mut created, &mut exited, &mut kernel, &mut user) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// Unix seconds when the process `pid` started; `None` when it is gone (or not ours to ask).
pub fn started_at(pid: u32) -> HostResult<Option<i64>> {
    let Ok(ticks) = with_process(pid, PROCESS_QUERY_LIMITED_INFORMATION, created) else {
        return Ok(None);
    };
    let ticks =
        ticks.map_err(|e| HostError::io(format!("read the start time of process {pid}"), e))?;
    const UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;
    Ok(Some(
        (ticks.saturating_sub(UNIX_EPOCH_TICKS) / 10_000_000) as i64,
    ))
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
    let mut entry: PROCESSENTRY32W = super::ffi::zeroed();
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut found = None;
    // SAFETY: entry has its size set; snap is valid until closed.
    let mut ok = unsafe { Process32FirstW(snap, &mut entry) };
    while ok != 0 {
        if super::ffi::wide_until_nul(&entry.szExeFile).eq_ignore_ascii_case(image) {
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

/// Whether process `pid` runs, with its creation time; `None` when it has ended (its object
/// signaled) or no process has the id. One this process may not open is taken as running,
/// its creation unknown (OpenProcess remarks).
pub fn running(pid: u32) -> Option<Option<u64>> {
    use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{PROCESS_SYNCHRONIZE, WaitForSingleObject};
    let access = PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE;
    // SAFETY: a valid handle with SYNCHRONIZE; a zero timeout only tests it.
    let ended = |h| unsafe { WaitForSingleObject(h, 0) } == WAIT_OBJECT_0;
    match with_process(pid, access, |h| (ended(h), created(h).ok())) {
        Ok((ended, created)) => (!ended).then_some(created),
        Err(e) => (e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32)).then_some(None),
    }
}
