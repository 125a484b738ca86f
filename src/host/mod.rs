//! Everything calicoctl-win touches on a Windows node, as small traits with two
//! implementations: the real host (`windows/`, Windows only) and SimHost (`sim.rs`), a
//! directory-backed simulated Windows host with the same contracts.
//!
//! Paths on the host are Windows paths (`C:\CalicoWindows\...`) given as strings; registry keys
//! are written with their root (`HKLM\Software\Tigera\Calico`).

pub mod acl;
pub mod boot;
pub mod events;
pub mod hns;
pub mod http_probe;
pub mod ip_config;
pub mod lock;
pub mod process;
pub mod runtime;
pub mod select;
pub mod sharing;
pub mod sim;
pub mod uplink;
#[cfg(windows)]
pub mod windows;

#[cfg(test)]
pub(crate) mod contract;

pub use hns::{HnsEndpoint, HnsNetwork};
pub use process::{Child, LineSink, Output, ProcessSpec};

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

/// What a host call can fail with. An error the OS (or a Windows API) gave keeps its code and
/// message in its own text, `add route 169.254.169.254/32 via 10.0.0.1 on interface 5: Access
/// is denied. (os error 5)`, so that however it is formatted (a log line's `{e}`, an event, a
/// cause in the JSON) the reason reaches the reader; it is not a separate `source`, which a
/// `{e}` would drop.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{what} does not exist")]
    NotFound { what: String },
    #[error("{what} already exists")]
    Exists { what: String },
    /// The host refused the call in its current state (a running service cannot be deleted).
    #[error("{what}: {reason}")]
    Refused { what: String, reason: String },
    /// A whole subsystem is missing, like HNS without the Containers feature.
    #[error("{what} is not available on this host: {reason}")]
    Unavailable { what: String, reason: String },
    #[error("timed out after {}s waiting for {what}", .after.as_secs())]
    Timeout { what: String, after: Duration },
    /// An I/O call failed: the operation and its object, then the OS's message and code.
    #[error("{op}: {error}")]
    Io { op: String, error: std::io::Error },
    /// A Windows API returned an error code: a Win32 error (`os error 5`) or an HRESULT.
    #[error("{op}: {message} ({})", code_text(*.code))]
    Api {
        op: String,
        code: u32,
        message: String,
    },
    /// SimHost's fault injection (tests only).
    #[error("simulated failure injected at mutating call {n} ({op})")]
    Injected { n: u64, op: String },
}

/// A Windows error code as Windows tools print it: a Win32 error as `os error 5` (as Rust's
/// `io::Error` does), an HRESULT in hex.
fn code_text(code: u32) -> String {
    if code <= 0xFFFF {
        format!("os error {code}")
    } else {
        format!("HRESULT {code:#010x}")
    }
}

/// The message of a Win32 error as Windows words it (FormatMessage's text), for the few codes
/// the simulated host gives; others by number.
pub fn win32_message(code: u32) -> String {
    match code {
        2 => "The system cannot find the file specified.".into(),
        3 => "The system cannot find the path specified.".into(),
        5 => "Access is denied.".into(),
        32 => "The process cannot access the file because it is being used by another process."
            .into(),
        87 => "The parameter is incorrect.".into(),
        1058 => "The service cannot be started, either because it is disabled or because it has no enabled devices associated with it.".into(),
        other => format!("Windows error {other}"),
    }
}

impl HostError {
    pub fn io(op: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            op: op.into(),
            error,
        }
    }

    /// A Win32 error code the OS answered `op` with.
    pub fn win32(op: impl Into<String>, code: u32) -> Self {
        Self::Api {
            op: op.into(),
            code,
            message: win32_message(code),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// The OS's error code, when the OS refused the call.
    pub fn os_code(&self) -> Option<u32> {
        match self {
            Self::Io { error, .. } => error.raw_os_error().map(|c| c as u32),
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type HostResult<T> = Result<T, HostError>;

/// A registry value of one of the three types the tool reads and writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum RegValue {
    #[serde(rename = "REG_SZ")]
    Sz(String),
    /// A string whose `%VARIABLE%`s its reader expands (`%SystemRoot%\...`).
    #[serde(rename = "REG_EXPAND_SZ")]
    ExpandSz(String),
    #[serde(rename = "REG_DWORD")]
    Dword(u32),
    #[serde(rename = "REG_MULTI_SZ")]
    MultiSz(Vec<String>),
}

/// The registry. Keys are case-insensitive, as on Windows.
pub trait Registry {
    /// A value, or `None` when the key or the value is missing.
    fn reg_get(&self, key: &str, name: &str) -> HostResult<Option<RegValue>>;
    /// Writes a value, creating the key and its parents.
    fn reg_set(&self, key: &str, name: &str, value: &RegValue) -> HostResult<()>;
    /// Deletes a value; a missing value or key is not an error.
    fn reg_delete_value(&self, key: &str, name: &str) -> HostResult<()>;
    fn reg_key_exists(&self, key: &str) -> HostResult<bool>;
    /// Deletes a key with everything under it; a missing key is not an error.
    fn reg_delete_key(&self, key: &str) -> HostResult<()>;
}

/// How a service starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartType {
    Auto,
    DelayedAuto,
    Manual,
    Disabled,
}

/// What the service control manager does when a service fails.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// Restart after these delays, for the first, second, subsequent failures.
    #[serde(with = "crate::duration::text::list")]
    pub restart_after: Vec<Duration>,
    /// The failure count resets after this long without a failure.
    #[serde(with = "crate::duration::text")]
    pub reset_after: Duration,
    /// Also apply the actions when the service stops itself with an error exit code.
    pub on_non_crash_failures: bool,
}

/// A service to register. Services always run as LocalSystem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceSpec {
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// The program, a Windows path.
    pub program: String,
    pub args: Vec<String>,
    /// Services this one depends on.
    pub dependencies: Vec<String>,
    pub start: StartType,
    pub recovery: Option<Recovery>,
}

impl ServiceSpec {
    /// The command line the SCM stores when the service is registered through
    /// windows-service: the program and each argument escaped by its `shell_escape::escape`
    /// (quoted only when they hold a space, tab, newline or quote, or are empty).
    pub fn command_line(&self) -> String {
        std::iter::once(quote_arg(&self.program))
            .chain(self.args.iter().map(|a| quote_arg(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether a stored command line runs this program with these arguments, compared as
    /// Windows parses it (CommandLineToArgvW), never as text: `"C:\x.exe" a` and `C:\x.exe a`
    /// are the same command, and so are paths differing only in case.
    pub fn same_command(&self, stored: &str) -> bool {
        let (program, args) = split_command_line(stored);
        program.eq_ignore_ascii_case(&self.program) && args == self.args
    }
}

/// One argument escaped as windows-service 0.8 escapes it (its `shell_escape.rs`, after
/// "Everyone quotes command line arguments the wrong way"): backslashes are doubled only
/// before a quote or the closing quote.
fn quote_arg(a: &str) -> String {
    if !a.is_empty() && !a.contains([' ', '\t', '\n', '\u{b}', '"']) {
        return a.to_owned();
    }
    let mut out = String::with_capacity(a.len() + 2);
    out.push('"');
    let mut slashes = 0usize;
    for c in a.chars() {
        match c {
            '\\' => slashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', slashes * 2 + 1));
                out.push('"');
                slashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', slashes));
                out.push(c);
                slashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', slashes * 2));
    out.push('"');
    out
}

/// Splits a command line into the program and its arguments as Windows does
/// (CommandLineToArgvW, as documented and as Wine implements it): the program runs to the
/// first space or tab, or between quotes with no escapes; in the arguments, 2n backslashes
/// and a quote are n backslashes and a quote that opens or closes, 2n+1 backslashes and a
/// quote are n backslashes and a literal quote, other backslashes are literal, and `""`
/// inside quotes is a literal quote that also ends the quoted part. Under Wine a test
/// compares this with the real CommandLineToArgvW (`host::windows::cmdline_tests`).
pub fn split_command_line(line: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut program = String::new();
    if chars.first() == Some(&'"') {
        i = 1;
        while i < chars.len() && chars[i] != '"' {
            program.push(chars[i]);
            i += 1;
        }
        i += 1;
    } else {
        while i < chars.len() && !matches!(chars[i], ' ' | '\t') {
            program.push(chars[i]);
            i += 1;
        }
    }
    let mut args = Vec::new();
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut arg = String::new();
        let mut quoted = false;
        while i < chars.len() {
            match chars[i] {
                ' ' | '\t' if !quoted => break,
                '\\' => {
                    let run = chars[i..].iter().take_while(|c| **c == '\\').count();
                    i += run;
                    if chars.get(i) == Some(&'"') {
                        arg.extend(std::iter::repeat_n('\\', run / 2));
                        if run % 2 == 1 {
                            arg.push('"');
                            i += 1;
                        }
                    } else {
                        arg.extend(std::iter::repeat_n('\\', run));
                    }
                }
                // Wine's CommandLineToArgvW: a third quote in a row emits one and ends the
                // quoted part.
                '"' if quoted && chars.get(i + 1) == Some(&'"') => {
                    arg.push('"');
                    quoted = false;
                    i += 2;
                }
                '"' => {
                    quoted = !quoted;
                    i += 1;
                }
                c => {
                    arg.push(c);
                    i += 1;
                }
            }
        }
        args.push(arg);
    }
    (program, args)
}

/// A service's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceState {
    Stopped,
    StartPending,
    StopPending,
    Running,
    /// Paused or continuing: not a state the tool puts a service in.
    Other,
}

/// What a stop does next when the SCM answered `ERROR_SERVICE_CANNOT_ACCEPT_CTRL` (1061):
/// "the state of the service is SERVICE_STOPPED, SERVICE_START_PENDING, or
/// SERVICE_STOP_PENDING" (Microsoft's ControlService documentation). A service still starting
/// (RemoteAccess restarted a moment ago) is waited for until it runs, then stopped; one already
/// stopping is waited for until it has stopped; both within the stop's timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCannotAccept {
    /// Stopped already: done.
    Done,
    /// Still starting or between states: wait a moment, then send the stop again.
    RetryStop,
    /// Stopping: wait until it has stopped.
    WaitStopped,
}

impl AfterCannotAccept {
    pub fn for_state(state: ServiceState) -> Self {
        match state {
            ServiceState::Stopped => Self::Done,
            ServiceState::StopPending => Self::WaitStopped,
            ServiceState::StartPending | ServiceState::Running | ServiceState::Other => {
                Self::RetryStop
            }
        }
    }
}

/// A registered service: its state and configuration as the SCM reports them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledService {
    pub name: String,
    pub state: ServiceState,
    pub pid: Option<u32>,
    /// Unix seconds when the service's process started; `None` when it is not running or
    /// the time cannot be read (the process ended while it was asked).
    #[serde(default)]
    pub since: Option<i64>,
    pub display_name: String,
    /// The whole command line, program and arguments (the SCM's `ImagePath`).
    pub command_line: String,
    pub start: StartType,
    pub dependencies: Vec<String>,
    pub account: String,
}

impl InstalledService {
    /// The program file name, lower case (`nssm.exe`, `containerd.exe`).
    pub fn program_file_name(&self) -> String {
        let (program, _) = split_command_line(&self.command_line);
        program
            .rsplit(['\\', '/'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
    }
}

/// The service control manager.
pub trait Services {
    /// A service's state and configuration, or `None` when it is not registered.
    fn service_query(&self, name: &str) -> HostResult<Option<InstalledService>>;
    /// Registers a service; fails with `Exists` when the name is taken.
    fn service_create(&self, spec: &ServiceSpec) -> HostResult<()>;
    /// Rewrites the configuration of a registered service.
    fn service_update(&self, spec: &ServiceSpec) -> HostResult<()>;
    /// Starts a service and waits until it runs; starting a running service is not an error.
    fn service_start(&self, name: &str, timeout: Duration) -> HostResult<()>;
    /// Stops a service and waits until it stopped; stopping a stopped service is not an error.
    fn service_stop(&self, name: &str, timeout: Duration) -> HostResult<()>;
    /// Deletes a stopped service; a running one is refused.
    fn service_delete(&self, name: &str) -> HostResult<()>;
}

/// The Host Network Service.
pub trait Hns {
    /// Every HNS network; `Unavailable` when HNS is missing.
    fn hns_networks(&self) -> HostResult<Vec<HnsNetwork>>;
    fn hns_endpoints(&self, network_id: &str) -> HostResult<Vec<HnsEndpoint>>;
    /// Creates a network from an HCN schema-2.0 JSON document; a taken name is refused.
    fn hns_create_network(&self, spec_json: &str) -> HostResult<HnsNetwork>;
    /// Deletes a network and its endpoints.
    fn hns_delete_network(&self, id: &str) -> HostResult<()>;
    /// Deletes one endpoint (`HcnDeleteEndpoint`); `NotFound` when there is none with `id`.
    fn hns_delete_endpoint(&self, id: &str) -> HostResult<()>;
    /// Takes an endpoint out of the HCN namespace it is in (`HcnModifyNamespace` with a
    /// `Remove` of the `Endpoint`, as hcsshim hcn/hcnnamespace.go `RemoveNamespaceEndpoint`
    /// asks it, which containerd calls before it deletes a pod's endpoint); `NotFound` when
    /// there is no such namespace or endpoint.
    fn hns_remove_namespace_endpoint(&self, namespace: &str, endpoint: &str) -> HostResult<()>;
    /// The HNS service's version, (major, minor): hcsshim's `GetGlobals`, an HNS v1 call
    /// (`HNSCall("GET", "/globals/version")` of vmcompute.dll).
    fn hns_version(&self) -> HostResult<(u32, u32)>;
    /// HNS's policy lists (what `Get-HnsPolicyList` shows: kube-proxy's load balancers), an
    /// HNS v1 call (`HNSCall("GET", "/policylists/")`, hcsshim internal/hns/hnspolicylist.go),
    /// at most `hns::MAX_POLICY_LISTS`.
    fn hns_policy_lists(&self) -> HostResult<Vec<serde_json::Value>>;
}

/// Who may read a written file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// The directory's defaults.
    Normal,
    /// SYSTEM and Administrators only (0600 on the simulated host): tokens and keys.
    Secret,
}

impl Access {
    /// `Secret` for a secret file, else `Normal`.
    pub fn secret_if(secret: bool) -> Self {
        if secret { Self::Secret } else { Self::Normal }
    }
}

/// Calls an API that fills a buffer and answers "too small, this many bytes" (`overflow`, the
/// size written back into its in-out argument), growing the buffer up to `attempts` times, as
/// `GetAdaptersAddresses` is called ("the recommended method ... is to call it in a loop",
/// Microsoft's documentation). The filled buffer, 8-byte aligned; `Err(code)` with the last
/// answer when it failed, or when the buffer was still too small after the last attempt (never
/// an unfilled buffer read as if it were the answer).
pub fn with_growing_buffer(
    mut size: u32,
    attempts: u32,
    overflow: u32,
    mut call: impl FnMut(&mut [u64], &mut u32) -> u32,
) -> Result<Vec<u64>, u32> {
    let mut last = overflow;
    for _ in 0..attempts {
        let mut buf = vec![0u64; (size as usize).div_ceil(8)];
        last = call(&mut buf, &mut size);
        match last {
            0 => return Ok(buf),
            code if code == overflow => continue,
            code => return Err(code),
        }
    }
    Err(last)
}

/// The most `Files::read_file` reads of one file: every file calicoctl-win reads whole (the
/// install record, its journal, kubeconfigs, environment and CNI files, the services' logs for
/// `diags`, which rotate at 10 MB) is far smaller. Enforced while reading.
pub const READ_CAP: u64 = 64 << 20;

/// Reads the file at `local` (named `path` in errors) whole, at most `READ_CAP` bytes;
/// `None` when it does not exist. How both hosts' `read_file` reads.
pub fn read_capped(local: &std::path::Path, path: &str) -> HostResult<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match std::fs::File::open(local) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HostError::io(format!("read {path}"), e)),
    };
    let mut out = Vec::new();
    file.take(READ_CAP + 1)
        .read_to_end(&mut out)
        .map_err(|e| HostError::io(format!("read {path}"), e))?;
    if out.len() as u64 > READ_CAP {
        return Err(HostError::Refused {
            what: format!("read {path}"),
            reason: format!(
                "it is larger than {} MiB, the most calicoctl-win reads of one file",
                READ_CAP >> 20
            ),
        });
    }
    Ok(Some(out))
}

/// Opens `local`, the host's `path`, to write (emptied, or appended to), making its
/// directories.
pub(crate) fn open_to_write(
    local: &std::path::Path,
    path: &str,
    append: bool,
) -> HostResult<std::fs::File> {
    if let Some(parent) = local.parent() {
        fs_err::create_dir_all(parent)
            .map_err(|e| HostError::io(format!("create the directory of {path}"), e))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .open(local)
        .map_err(|e| HostError::io(format!("write {path}"), e))
}

/// An entry of a directory on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    /// A directory itself, not a link or junction to one.
    pub is_dir: bool,
}

/// Whether `dir` is a drive (`C:`) or a UNC share's root, where the walks up stop.
fn is_volume_root(dir: &str) -> bool {
    dir.len() <= 2
        || dir.ends_with(':')
        || dir.starts_with("\\\\") && dir.matches('\\').count() <= 3
}

/// The host's file system.
pub trait Files {
    fn read_file(&self, path: &str) -> HostResult<Option<Vec<u8>>>;
    /// Writes only when the content or access differs; returns whether it wrote.
    fn write_file(&self, path: &str, contents: &[u8], access: Access) -> HostResult<bool> {
        if self.read_file(path)?.as_deref() == Some(contents)
            && self.file_access(path)? == Some(access)
        {
            return Ok(false);
        }
        self.replace_file(path, contents, access)?;
        Ok(true)
    }
    /// Writes atomically (temporary file, then rename), creating parent directories; a secret
    /// is restricted before it gets its name.
    fn replace_file(&self, path: &str, contents: &[u8], access: Access) -> HostResult<()>;
    /// The access a file was written with, `None` if it does not exist.
    fn file_access(&self, path: &str) -> HostResult<Option<Access>>;
    /// Copies a file from this machine's file system (calicoctl-win itself) onto the host,
    /// streamed and atomically (a temporary file renamed).
    fn copy_in(&self, from: &Path, to: &str) -> HostResult<()>;
    /// Copies a file on the host to another path on it with `access` (a backup before a
    /// replacement, and putting it back), streamed and atomically; `false` when `from` does
    /// not exist.
    fn copy_file(&self, from: &str, to: &str, access: Access) -> HostResult<bool>;
    /// Removes a file; returns whether it existed.
    fn remove_file(&self, path: &str) -> HostResult<bool>;
    /// Removes a directory if it is empty; returns whether it was removed.
    fn remove_empty_dir(&self, path: &str) -> HostResult<bool>;
    /// Removes a directory and everything in it (a link in it is removed, never followed);
    /// whether it was there.
    fn remove_tree(&self, path: &str) -> HostResult<bool>;
    /// The entries of a directory, sorted by name, each read without following it (a
    /// junction is no directory here); `None` when the directory does not exist.
    fn list_dir(&self, path: &str) -> HostResult<Option<Vec<DirEntry>>> {
        let local = self.local_path(path)?;
        let entries = match std::fs::read_dir(&local) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(HostError::io(format!("list {path}"), e)),
        };
        let mut out = Vec::new();
        for e in entries {
            let e = e.map_err(|e| HostError::io(format!("list {path}"), e))?;
            let is_dir = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir());
            out.push(DirEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                is_dir,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Some(out))
    }
    /// A file's size and modification time (nanoseconds since 1970; NTFS keeps 100 ns
    /// ticks); `None` when there is no regular file at `path`.
    fn stat(&self, path: &str) -> HostResult<Option<(u64, u128)>> {
        let local = self.local_path(path)?;
        let Ok(meta) = std::fs::metadata(&local) else {
            return Ok(None);
        };
        if !meta.is_file() {
            return Ok(None);
        }
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Some((meta.len(), modified)))
    }
    /// The SHA-256 of a file, streamed, in hex; `None` when there is no file at `path`.
    fn sha256(&self, path: &str) -> HostResult<Option<String>> {
        let local = self.local_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        crate::files::sha256_file(&local)
            .map(Some)
            .map_err(|e| HostError::io(format!("read {path}"), e))
    }
    /// The last `max` bytes of a file from its first whole line (all of a shorter file), read
    /// from the end; `None` when there is no file at `path`.
    fn read_tail(&self, path: &str, max: u64) -> HostResult<Option<Vec<u8>>> {
        let local = self.local_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        crate::files::read_tail(&local, max)
            .map(Some)
            .map_err(|e| HostError::io(format!("read {path}"), e))
    }
    /// A file opened for reading (streamed, or at offsets while another handle still writes
    /// it: a release zip followed as it downloads); `None` when there is no regular file.
    /// On Windows both handles share read, write and delete (Rust's std
    /// `library/std/src/sys/fs/windows.rs`, `OpenOptions::new`: `share_mode` is
    /// `FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE`), so neither blocks the other
    /// nor the rename that gives the finished download its name.
    fn open_read(&self, path: &str) -> HostResult<Option<std::fs::File>> {
        let local = self.local_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        std::fs::File::open(&local)
            .map(Some)
            .map_err(|e| HostError::io(format!("read {path}"), e))
    }
    /// A file opened for writing, its parent directories created: emptied first, or appended
    /// to (`append`, a download resumed). For what is written in a stream under the install
    /// root's cache (the release's download and its staged extraction); everything the plan
    /// puts in place is written atomically by the methods above.
    fn open_write(&self, path: &str, append: bool) -> HostResult<std::fs::File> {
        open_to_write(&self.local_path(path)?, path, append)
    }
    /// Renames a file (a finished download to its name), replacing what had `to`'s name (on
    /// Windows std's `rename` is `MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`, same file).
    fn rename(&self, from: &str, to: &str) -> HostResult<()> {
        let (f, t) = (self.local_path(from)?, self.local_path(to)?);
        // A Go reader's handle blocks a rename for a moment on Windows (`sharing`).
        sharing::on_windows(|| std::fs::rename(&f, &t))
            .map_err(|e| HostError::io(format!("rename {from} to {to}"), e))
    }
    fn dir_exists(&self, path: &str) -> HostResult<bool>;
    /// The parent directories of `path` that do not exist yet, outermost first.
    fn missing_parents(&self, path: &str) -> HostResult<Vec<String>> {
        let mut out = Vec::new();
        let mut cur = path;
        while let Some((parent, _)) = cur.rsplit_once('\\') {
            if is_volume_root(parent) {
                break;
            }
            if self.dir_exists(parent)? {
                break;
            }
            out.push(parent.to_owned());
            cur = parent;
        }
        out.reverse();
        Ok(out)
    }

    /// The parent directories of `path` that a new install may call its own, outermost first:
    /// those missing, and those holding nothing but the temporary files of killed writes (and
    /// such directories): what a run killed while it created them leaves.
    fn vacant_parents(&self, path: &str) -> HostResult<Vec<String>> {
        let mut out = self.missing_parents(path)?;
        let mut cur = out.first().map_or(path, String::as_str).to_owned();
        while let Some((parent, _)) = cur.rsplit_once('\\') {
            if is_volume_root(parent) || !self.is_vacant(parent)? {
                break;
            }
            out.insert(0, parent.to_owned());
            cur = parent.to_owned();
        }
        Ok(out)
    }

    /// Whether `dir` (a host path) holds only temporaries of killed writes and vacant directories.
    fn is_vacant(&self, dir: &str) -> HostResult<bool> {
        let Some(entries) = self.list_dir(dir)? else {
            return Ok(false);
        };
        for e in entries {
            let vacant = if e.is_dir {
                self.is_vacant(&crate::layout::join(dir, &e.name))?
            } else {
                crate::files::is_stale_temporary(&e.name)
            };
            if !vacant {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Removes `dir` (a host path) when it is vacant (`is_vacant`): its vacant subdirectories
    /// first, then it; whether it is gone.
    fn remove_vacant(&self, dir: &str) -> HostResult<bool> {
        if !self.is_vacant(dir)? {
            return Ok(false);
        }
        for e in self.list_dir(dir)?.unwrap_or_default() {
            if e.is_dir {
                self.remove_vacant(&crate::layout::join(dir, &e.name))?;
            }
        }
        self.remove_empty_dir(dir)
    }
    /// The owner and access list of a file or directory in SDDL, which `acl` reads by meaning;
    /// `None` when it does not exist.
    fn security(&self, path: &str) -> HostResult<Option<String>>;
    /// Creates a directory and its parents; `false` when it was there.
    fn create_dir(&self, path: &str) -> HostResult<bool>;
    /// Whether `path` itself is a reparse point (a junction, a mount point or a symbolic
    /// link), read without following it; `false` when it does not exist. Any local user may
    /// make a junction where they may make a directory (`mklink /J` needs no privilege).
    fn is_reparse_point(&self, path: &str) -> HostResult<bool>;
    /// Gives an existing file or directory the owner and access list of `sddl` (protected
    /// from inheritance when it says `P`).
    fn set_security(&self, path: &str, sddl: &str) -> HostResult<()>;
    /// Where a host path lives in this machine's file system: the path itself on Windows, a
    /// file under the state directory on SimHost. Only for what another program's API needs
    /// as a path of its own: the service logs a process keeps open and appends to.
    /// Everything else goes through the methods above (the admin kubeconfig at `C:\k\config`
    /// too: it and the files it names are read as bytes, `cluster::OnHost`; the release is
    /// downloaded and staged through `open_write`, `open_read` and `rename`, `ReleaseDisk`).
    fn local_path(&self, path: &str) -> HostResult<std::path::PathBuf>;
}

/// An IPv4 address on an interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceAddress {
    pub interface: String,
    pub index: u32,
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
}

/// An IPv4 route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub destination: Ipv4Addr,
    pub prefix_len: u8,
    pub next_hop: Ipv4Addr,
    pub interface_index: u32,
    pub metric: u32,
}

impl Route {
    /// `route 169.254.169.254/32 via 10.0.0.1 on interface 5`: the route as an error names it.
    pub fn describe(&self) -> String {
        format!(
            "route {}/{} via {} on interface {}",
            self.destination, self.prefix_len, self.next_hop, self.interface_index
        )
    }
}

/// A network adapter as the IP helper's `GetAdaptersAddresses` describes it (Microsoft's
/// iphlpapi reference, `IP_ADAPTER_ADDRESSES_LH`, on every Windows Server the tool supports):
/// what the adapter the vSwitch binds is chosen by and what it must keep across it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Adapter {
    /// `FriendlyName`: `Ethernet`, `vEthernet (Ethernet)`.
    pub name: String,
    pub index: u32,
    /// `Description`, the driver's name: `Hyper-V Virtual Ethernet Adapter` for a vSwitch's
    /// host adapter, `Microsoft Network Adapter Multiplexor Driver` for an LBFO team.
    pub description: String,
    /// `PhysicalAddress`, written `00-15-5D-01-02-03` as `Get-NetAdapter` shows it.
    pub mac: String,
    pub addresses: Vec<AdapterAddress>,
    /// `IP_ADAPTER_DHCP_ENABLED` in `Flags`.
    pub dhcp: bool,
    /// `FirstGatewayAddress` (asked for with `GAA_FLAG_INCLUDE_GATEWAYS`).
    pub gateways: Vec<Ipv4Addr>,
    /// `FirstDnsServerAddress`.
    pub dns_servers: Vec<Ipv4Addr>,
    /// `DnsSuffix`.
    pub dns_suffix: String,
    /// `Ipv4Metric`: the interface metric.
    pub metric: u32,
    /// `AdapterName`, the interface's GUID (`{...}`): its key under
    /// `HKLM\SYSTEM\CurrentControlSet\Services\Tcpip\Parameters\Interfaces`.
    #[serde(default)]
    pub guid: String,
}

/// One IPv4 address of an adapter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterAddress {
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
    /// `DadState` is `IpDadStatePreferred`: duplicate address detection is done and the
    /// address is in use (a tentative or duplicate one is not).
    pub preferred: bool,
}

/// The description Windows gives a vSwitch's host (vEthernet) adapter.
pub const VSWITCH_ADAPTER_DESCRIPTION: &str = "Hyper-V Virtual Ethernet Adapter";

impl Adapter {
    /// A vSwitch's host adapter (its description, `Hyper-V Virtual Ethernet Adapter`, with
    /// ` #2` and so on when there are several).
    pub fn is_vswitch_port(&self) -> bool {
        self.description.starts_with(VSWITCH_ADAPTER_DESCRIPTION)
    }

    /// Whether it holds exactly this address (never by text: 10.0.0.1 is not 10.0.0.15).
    pub fn holds(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| a.ip == ip)
    }

    /// A Preferred address that is neither loopback nor link-local (169.254/16, APIPA).
    pub fn stable_address(&self) -> Option<&AdapterAddress> {
        self.addresses
            .iter()
            .find(|a| a.preferred && !a.ip.is_link_local() && !a.ip.is_loopback())
    }
}

#[cfg(test)]
impl Adapter {
    /// An Ethernet adapter on DHCP with these Preferred /24 addresses, metric 15, no DNS: the
    /// tests' starting point, changed with struct update syntax.
    pub fn for_test(name: &str, index: u32, mac: &str, ips: &[&str]) -> Self {
        Self {
            name: name.into(),
            index,
            description: "Microsoft Hyper-V Network Adapter".into(),
            mac: mac.into(),
            addresses: ips
                .iter()
                .map(|ip| AdapterAddress {
                    ip: ip.parse().unwrap_or(Ipv4Addr::UNSPECIFIED),
                    prefix_len: 24,
                    preferred: true,
                })
                .collect(),
            dhcp: true,
            gateways: Vec::new(),
            dns_servers: Vec::new(),
            dns_suffix: String::new(),
            metric: 15,
            guid: format!("{{00000000-0000-0000-0000-{index:012}}}"),
        }
    }
}

/// IP configuration.
pub trait Network {
    fn ipv4_addresses(&self) -> HostResult<Vec<InterfaceAddress>>;
    /// Every adapter with IPv4 enabled, with its IPv4 configuration (loopback included):
    /// `GetAdaptersAddresses(AF_INET)`, which Microsoft's iphlpapi reference documents as
    /// "Return only IPv4 addresses associated with adapters with IPv4 enabled". The physical
    /// adapter an External vSwitch binds has IPv4 unbound and is not among them
    /// (`ethernet_interfaces` lists it; the adapter choice reads both).
    fn adapters(&self) -> HostResult<Vec<Adapter>>;
    /// Every Ethernet interface Windows lists, IPv4 bound or not (`GetIfTable2`, which lists
    /// every interface, filter modules left out): name, index, description, MAC and GUID, with
    /// no addresses and no IPv4 settings.
    fn ethernet_interfaces(&self) -> HostResult<Vec<Adapter>>;
    /// Sets an interface's IPv4 metric and turns its automatic metric off
    /// (`GetIpInterfaceEntry` and `SetIpInterfaceEntry`, netioapi.h, Windows Vista and later).
    fn set_interface_metric(&self, index: u32, metric: u32) -> HostResult<()>;
    /// Adds a manual IPv4 address to an interface (`CreateUnicastIpAddressEntry`, netioapi.h,
    /// Windows Vista and later); one already there is `Exists`.
    fn add_address(&self, index: u32, ip: Ipv4Addr, prefix_len: u8) -> HostResult<()>;
    /// Makes a setting of an interface's IPv4 configuration through WMI's
    /// `Win32_NetworkAdapterConfiguration`, which tells the DHCP and DNS clients
    /// (`ip_config::AdapterSetting`); an interface no instance has is `NotFound`.
    fn configure_adapter(&self, index: u32, setting: &ip_config::AdapterSetting) -> HostResult<()>;

    fn routes(&self) -> HostResult<Vec<Route>>;
    /// Adds a route; an identical existing route is refused with `Exists`.
    fn add_route(&self, route: &Route) -> HostResult<()>;
    /// `GET path` from a server on the host's loopback (`127.0.0.1:port`), within `timeout`:
    /// its answer, or `None` when nothing listens (Felix's health endpoint).
    fn local_http_get(
        &self,
        port: u16,
        path: &str,
        timeout: Duration,
    ) -> HostResult<Option<http_probe::Answer>>;
}

impl SystemFacts {
    /// The boot on the local wall clock as Windows reports it now (Calico's scripts' view).
    pub fn boot_local_reported(&self) -> Option<i64> {
        self.boot_local_seconds_reported.or(self.boot_local_seconds)
    }
}

/// Facts about the operating system.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemFacts {
    pub build: u32,
    /// The update build revision; `None` when the registry does not hold it.
    pub ubr: Option<u32>,
    pub product_name: Option<String>,
    pub edition: Option<String>,
    /// `Server`, `Server Core` or `Client`.
    pub installation_type: Option<String>,
    pub is_64bit: bool,
    pub elevated: bool,
    /// Identifies the current boot, the same string in any culture (the boot time in seconds
    /// since the Unix epoch on Windows); `None` when the kernel's answer gave no boot time.
    /// Never empty: an unknown boot is no boot to compare (`supervise::node`).
    pub boot_id: Option<String>,
    /// The boot time on the local wall clock, in seconds since 1970-01-01T00:00 local time,
    /// unmoved by clock steps (`host::boot::boot_instant`).
    #[serde(default)]
    pub boot_local_seconds: Option<i64>,
    /// The same on the local wall clock as Windows reports it now, moved by every clock step
    /// since the boot (`host::boot::reported_local`): what Calico's scripts format into the
    /// legacy `LastBootTime` and compare with it. `None` where nothing stepped the clock
    /// (a simulated host): then `boot_local_seconds` (`SystemFacts::boot_local_reported`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_local_seconds_reported: Option<i64>,
    /// The reported boot on the local wall clock by the time zone's rule for the boot's date
    /// (daylight saving time as it was then, `SystemTimeToTzSpecificLocalTimeEx`). Where it is
    /// not `boot_local_seconds_reported`, a DST change since the boot leaves open which of the
    /// two Calico's scripts format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_local_seconds_dated: Option<i64>,
    /// The host's name as `hostname` prints it; kubelet's node name unless it is overridden.
    #[serde(default)]
    pub hostname: Option<String>,
    /// The machine's WinHTTP proxy (`netsh winhttp show proxy`), `None` for direct access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winhttp_proxy: Option<SystemProxy>,
    /// The SID of the account this process runs as (`S-1-5-21-...`), when it can be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_sid: Option<String>,
    /// The drives by letter (`C`) and what they are (GetLogicalDrives, GetDriveTypeW); empty
    /// when unknown.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub drives: std::collections::BTreeMap<char, DriveKind>,
}

/// What a drive is, as GetDriveTypeW says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriveKind {
    Fixed,
    Removable,
    /// A network share mapped to a letter.
    Remote,
    CdRom,
    RamDisk,
    Unknown,
}

impl DriveKind {
    /// As a sentence says it: `a network drive`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Fixed => "a fixed local drive",
            Self::Removable => "a removable drive",
            Self::Remote => "a network drive",
            Self::CdRom => "a CD-ROM drive",
            Self::RamDisk => "a RAM disk",
            Self::Unknown => "a drive of unknown type",
        }
    }
}

/// A WinHTTP proxy setting as Windows gives it (`WINHTTP_PROXY_INFO`): `proxy` is
/// `host:port` or per-scheme `http=host:port;https=host:port`, `bypass` a `;`-separated list
/// (`<local>`, `*.example.com`, `10.*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemProxy {
    pub proxy: String,
    #[serde(default)]
    pub bypass: Option<String>,
}

pub trait SystemInfo {
    fn system_facts(&self) -> HostResult<SystemFacts>;
}

/// Running programs.
pub trait Processes {
    /// Starts a program. The child is stopped (gracefully, then killed) when dropped.
    fn spawn(&self, spec: &ProcessSpec) -> HostResult<Box<dyn Child>>;
    /// The pid of a running process with this image name (`kubelet.exe`), if any.
    fn process_pid(&self, image_name: &str) -> HostResult<Option<u32>>;
}

/// An inbound firewall rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirewallRule {
    /// The name the firewall shows (PowerShell's DisplayName; INetFwRule's Name).
    pub name: String,
    pub protocol: Protocol,
    pub local_port: u16,
    pub allow: bool,
    pub enabled: bool,
    /// The firewall profiles it applies in (`NET_FW_PROFILE_TYPE2`: Domain 1, Private 2,
    /// Public 4; `ALL_PROFILES` for every one). A rule of one profile does nothing while the
    /// node's network is in another.
    #[serde(default = "all_profiles")]
    pub profiles: u32,
    /// The remote addresses it lets in, as CIDRs (`INetFwRule::RemoteAddresses`); empty for
    /// any address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_addresses: Vec<String>,
}

/// `NET_FW_PROFILE2_ALL` (icftypes.h): the rule applies in every profile.
pub const ALL_PROFILES: u32 = 0x7FFF_FFFF;
const PROFILE_NAMES: [(u32, &str); 3] = [(1, "Domain"), (2, "Private"), (4, "Public")];

fn all_profiles() -> u32 {
    ALL_PROFILES
}

impl FirewallRule {
    /// Whether the rule lets inbound `protocol` traffic to `port` in, in every profile.
    pub fn opens(&self, protocol: Protocol, port: u16) -> bool {
        self.enabled
            && self.allow
            && self.protocol == protocol
            && self.local_port == port
            && self.profiles & 7 == 7
    }

    /// `INetFwRule::RemoteAddresses` for the rule: `*` (any), or the CIDRs comma-separated
    /// (Microsoft's INetFwRule::RemoteAddresses page: a subnet in prefix or mask notation).
    pub fn remote_addresses_text(&self) -> String {
        if self.remote_addresses.is_empty() {
            "*".into()
        } else {
            self.remote_addresses.join(",")
        }
    }

    /// The remote addresses from `INetFwRule::RemoteAddresses`: `*` is any; a subnet read
    /// back in mask notation (`10.0.0.0/255.0.0.0`) becomes a CIDR again.
    pub fn remote_addresses_from(text: &str) -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != "*")
            .map(|a| match a.split_once('/') {
                Some((ip, mask)) => match mask.parse::<std::net::Ipv4Addr>() {
                    Ok(m) => format!("{ip}/{}", u32::from(m).leading_ones()),
                    Err(_) => a.to_owned(),
                },
                None => a.to_owned(),
            })
            .collect()
    }

    /// The profiles it applies in, in words (`Domain, Private`).
    pub fn profile_names(&self) -> String {
        let names: Vec<&str> = PROFILE_NAMES
            .iter()
            .filter(|(bit, _)| self.profiles & bit != 0)
            .map(|(_, name)| *name)
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }
}

/// Whether rules added on this host take effect (`INetFwPolicy2::LocalPolicyModifyState`,
/// `NET_FW_MODIFY_STATE` in icftypes.h, for the profiles in effect now).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirewallModifyState {
    /// `NET_FW_MODIFY_STATE_OK`: a local rule takes effect.
    #[default]
    Ok,
    /// `NET_FW_MODIFY_STATE_GP_OVERRIDE`: Group Policy overrides local rules; one added here
    /// does not take effect.
    GroupPolicyOverride,
    /// `NET_FW_MODIFY_STATE_INBOUND_BLOCKED`: inbound traffic is blocked whatever the rules
    /// say (the profile's "block all inbound connections").
    InboundBlocked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

/// Windows Firewall rules, by name.
pub trait Firewall {
    fn firewall_rule(&self, name: &str) -> HostResult<Option<FirewallRule>>;
    /// Adds a rule; a taken name is refused with `Exists`.
    fn firewall_add(&self, rule: &FirewallRule) -> HostResult<()>;
    /// Removes a rule; returns whether it existed.
    fn firewall_remove(&self, name: &str) -> HostResult<bool>;
    /// Whether a rule added here takes effect in the profiles in effect now.
    fn firewall_modify_state(&self) -> HostResult<FirewallModifyState>;
}

/// How serious an event in the Application event log is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventLevel {
    Information,
    Warning,
    Error,
}

/// The Windows Application event log, where the service bodies report their start, stop and
/// failure.
pub trait EventLog {
    /// Writes one event of `source` with `message` as its text.
    fn report_event(
        &self,
        source: &str,
        level: EventLevel,
        id: u32,
        message: &str,
    ) -> HostResult<()>;
    /// The newest `max` events of a log that answer `query` (`EvtQuery`), newest first.
    fn read_events(
        &self,
        query: &events::EventQuery,
        max: usize,
    ) -> HostResult<Vec<events::LoggedEvent>>;
}

/// Which implementation a host is, for output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum HostKind {
    Windows,
    /// A simulated host in a state directory.
    Simulated {
        dir: String,
        profile: String,
    },
    /// A throw-away simulated host, for read-only commands off Windows.
    InMemory {
        profile: String,
    },
}

/// A Windows node: everything above.
pub trait Host:
    Registry + Services + Hns + Files + Network + SystemInfo + Processes + Firewall + EventLog + Sync
{
    fn kind(&self) -> HostKind;
}

/// The node's file system as the release's download and extraction see it: the install
/// root's cache on the node, every file opened, made, renamed and removed through `Files`
/// (so the simulated host's faults and the contract reach it).
pub struct ReleaseDisk<'a>(pub &'a dyn Host);

impl crate::release::Disk for ReleaseDisk<'_> {
    fn join(&self, dir: &str, name: &str) -> String {
        crate::layout::join(dir, name)
    }
    fn open(&self, path: &str) -> std::io::Result<Option<std::fs::File>> {
        self.0.open_read(path).map_err(std::io::Error::other)
    }
    fn write(&self, path: &str, append: bool) -> std::io::Result<std::fs::File> {
        self.0
            .open_write(path, append)
            .map_err(std::io::Error::other)
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.0.rename(from, to).map_err(std::io::Error::other)
    }
    fn remove_file(&self, path: &str) -> std::io::Result<()> {
        self.0
            .remove_file(path)
            .map(drop)
            .map_err(std::io::Error::other)
    }
    fn create_dir(&self, path: &str) -> std::io::Result<()> {
        self.0
            .create_dir(path)
            .map(drop)
            .map_err(std::io::Error::other)
    }
    fn list(&self, dir: &str) -> std::io::Result<Option<Vec<(String, bool)>>> {
        let entries = self.0.list_dir(dir).map_err(std::io::Error::other)?;
        Ok(entries.map(|es| es.into_iter().map(|e| (e.name, e.is_dir)).collect()))
    }
    fn remove_tree(&self, path: &str) -> std::io::Result<()> {
        self.0
            .remove_tree(path)
            .map(drop)
            .map_err(std::io::Error::other)
    }
    fn on_node(&self) -> bool {
        true
    }
}

impl crate::error::Diagnose for HostError {
    /// Only a timeout is diagnosed here; other host errors leave it to their causes.
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        matches!(self, Self::Timeout { .. }).then(|| crate::error::Diagnosis {
            exit: crate::error::Exit::Timeout,
            kind: crate::error::Kind::Timeout,
            hint: Some("the service logs under the logs directory (calico-node.log) say what it is waiting for; a longer --wait-timeout gives it more time".into()),
        })
    }
}

#[cfg(test)]
mod command_line_tests {
    use super::*;

    fn spec(program: &str, args: &[&str]) -> ServiceSpec {
        ServiceSpec {
            name: "CalicoNode".into(),
            display_name: String::new(),
            description: String::new(),
            program: program.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            dependencies: vec![],
            start: StartType::Auto,
            recovery: None,
        }
    }

    #[test]
    fn arguments_split_as_command_line_to_argv_w_splits_them() {
        // Microsoft's documented examples ("Parsing C++ command-line arguments"), after a program.
        let cases: &[(&str, &[&str])] = &[
            (r#""abc" d e"#, &["abc", "d", "e"]),
            (r#"a\\\b d"e f"g h"#, &[r"a\\\b", "de fg", "h"]),
            (r#"a\\\"b c d"#, &[r#"a\"b"#, "c", "d"]),
            (r#"a\\\\"b c" d e"#, &[r"a\\b c", "d", "e"]),
            (r#"a"b"" c d"#, &[r#"ab""#, "c", "d"]),
        ];
        for (line, want) in cases {
            let (program, args) =
                split_command_line(&format!(r#""C:\Program Files\x.exe" {line}"#));
            assert_eq!(program, r"C:\Program Files\x.exe");
            assert_eq!(args, *want, "{line}");
        }
        // The program is read without escapes, quoted or not.
        assert_eq!(
            split_command_line(r"C:\k\kubelet.exe --v=2").0,
            r"C:\k\kubelet.exe"
        );
    }

    #[test]
    fn the_stored_command_line_is_windows_services_and_compares_by_meaning() {
        let s = spec(
            r"C:\CalicoWindows\calicoctl-win.exe",
            &[
                "service",
                "run",
                "node",
                "--install-root",
                r"C:\CalicoWindows",
            ],
        );
        // windows-service quotes the program only when it needs it.
        assert_eq!(
            s.command_line(),
            r"C:\CalicoWindows\calicoctl-win.exe service run node --install-root C:\CalicoWindows"
        );
        // What an earlier calicoctl-win, or a hand-made registration, stored: the same command.
        assert!(s.same_command(
            r#""C:\CalicoWindows\calicoctl-win.exe" service run node --install-root "C:\CalicoWindows""#
        ));
        assert!(s.same_command(
            r"c:\calicowindows\CALICOCTL-WIN.EXE service run node --install-root C:\CalicoWindows"
        ));
        assert!(!s.same_command(
            r"C:\CalicoWindows\calicoctl-win.exe service run felix --install-root C:\CalicoWindows"
        ));
        // Any argument survives the round trip, spaces, quotes and trailing backslashes too.
        let odd = spec(
            r"C:\Program Files\Calico\calicoctl-win.exe",
            &[
                "",
                "a b",
                r#"say "hi""#,
                r"C:\dir\",
                r#"x\"y"#,
                "tab\there",
                r"\\server\share\",
            ],
        );
        assert!(
            odd.same_command(&odd.command_line()),
            "{}",
            odd.command_line()
        );
        assert_eq!(
            split_command_line(&odd.command_line()).1,
            odd.args,
            "{}",
            odd.command_line()
        );
    }
}

#[cfg(test)]
mod cannot_accept_tests {
    use super::{AfterCannotAccept, ServiceState};

    /// ControlService answers 1061 for a service that is stopped, starting or stopping: a
    /// stop then finishes, retries once it runs, or waits for the stop under way; never fails.
    #[test]
    fn a_stop_refused_while_pending_waits_instead_of_failing() {
        assert_eq!(
            AfterCannotAccept::for_state(ServiceState::Stopped),
            AfterCannotAccept::Done
        );
        assert_eq!(
            AfterCannotAccept::for_state(ServiceState::StopPending),
            AfterCannotAccept::WaitStopped
        );
        assert_eq!(
            AfterCannotAccept::for_state(ServiceState::StartPending),
            AfterCannotAccept::RetryStop
        );
    }
}

#[cfg(test)]
mod growing_buffer_tests {
    #[test]
    fn a_buffer_still_too_small_after_the_last_attempt_is_an_error_not_an_empty_answer() {
        const OVERFLOW: u32 = 111; // ERROR_BUFFER_OVERFLOW
        let mut calls = 0;
        let r = super::with_growing_buffer(16, 4, OVERFLOW, |_, size| {
            calls += 1;
            *size *= 2;
            OVERFLOW
        });
        assert_eq!((r, calls), (Err(OVERFLOW), 4));
        // Grown once, then filled.
        let r = super::with_growing_buffer(16, 4, OVERFLOW, |buf, size| {
            if buf.len() * 8 < 64 {
                *size = 64;
                return OVERFLOW;
            }
            buf[0] = 7;
            0
        });
        assert_eq!(r.map(|b| (b.len(), b[0])), Ok((8, 7)));
        assert_eq!(
            super::with_growing_buffer(16, 4, OVERFLOW, |_, _| 5),
            Err(5)
        );
    }
}

#[cfg(test)]
mod read_cap_tests {
    #[test]
    fn a_file_past_the_read_cap_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big");
        // Sparse: the size is set, nothing is written.
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(super::READ_CAP + 1))
            .expect("sparse file");
        let e = super::read_capped(&big, r"C:\big").expect_err("over the cap");
        assert!(e.to_string().contains("larger than 64 MiB"), "{e}");
        assert!(e.to_string().contains(r"C:\big"), "{e}");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(10))
            .expect("small");
        assert_eq!(
            super::read_capped(&big, "x").expect("read"),
            Some(vec![0; 10])
        );
        assert_eq!(
            super::read_capped(&dir.path().join("none"), "x").expect("read"),
            None
        );
    }
}
