//! One command at a time changes a host. `install`, `uninstall`, `reconfigure` and the `fetch`
//! commands that write take an exclusive lock on a file before they read the state they plan
//! from; a second command finds it held and stops within a second, naming the command that
//! holds it.
//!
//! The lock is the operating system's (`LockFileEx` on Windows, `flock` elsewhere, through
//! `File::try_lock`), so it dies with its process: a command killed from outside leaves no
//! stale lock, and the next command takes it over without guessing whether a pid is alive.
//! Who holds it is written beside it (`<lock>.json`): Windows locks byte ranges mandatorily, so
//! the locked file itself cannot be read by the command that finds it busy. The lock file is
//! never deleted: a command that removed it while another waited could let two hold the lock.
//! Nor is the record: it is written over in place and emptied on release, as Windows only
//! marks a file deleted while another (a look reading it) has it open, and refuses to open or
//! replace it until that one closes it (Microsoft's DeleteFileW remarks: "Subsequent calls to
//! CreateFile to open the file fail with ERROR_ACCESS_DENIED"). The lock is what is true; the
//! record only says who: one left by a command that was killed names a process that has ended
//! (or whose pid now names a later process), and is never reported.

use crate::layout::LOCK_FILE;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The command holding the lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub command: String,
    pub pid: u32,
    /// Unix seconds.
    pub started: i64,
    /// When its process started, as the operating system says (`running`): with the pid it
    /// names that process, and no later one given the same pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u64>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = jiff::Timestamp::from_second(self.started)
            .map_or_else(|_| self.started.to_string(), |t| t.to_string());
        write!(f, "{} (pid {}, started {started})", self.command, self.pid)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another calicoctl-win command is changing this host: {}", holder.as_ref().map_or_else(|| "one that has not said which yet".to_owned(), Holder::to_string))]
    Busy {
        holder: Option<Holder>,
        lock: PathBuf,
    },
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    pub fn hint(&self) -> String {
        match self {
            Self::Busy { lock, .. } => format!(
                "nothing was changed; wait for that command to finish and run this one again (the lock is {}; it goes with its process, also when that is killed)",
                lock.display()
            ),
            Self::Io { .. } => {
                "run calicoctl-win from an elevated prompt, or check that the directory is writable"
                    .into()
            }
        }
    }
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct HostLock {
    _file: File,
    /// The record of who holds it, kept open to empty it on release: opening it again then
    /// could be refused (a reader that shares no writing, an attribute set meanwhile).
    record: File,
    info: PathBuf,
}

impl Drop for HostLock {
    fn drop(&mut self) {
        // Nobody holds it now; both files stay (see the module documentation). A record left
        // full names this process, which is believed no more once it has ended.
        if let Err(e) = self.record.set_len(0) {
            eprintln!(
                "warning: cannot empty {}, which says who holds the host lock: {e}",
                self.info.display()
            );
        }
    }
}

/// Opens the record to write who holds the lock over what it said, in place (see the module
/// documentation), emptied; a look reading it meanwhile finds it empty or cut short, which
/// says nobody. It is opened without emptying it first, and written only when the name is
/// the file's one name: a link put there before the directory was protected (nobody but an
/// administrator may add one since) is removed, never written through; removing a link,
/// symbolic or hard, removes that name, not what it names (DeleteFileW remarks, unlink(2)).
fn open_record(info: &Path) -> std::io::Result<File> {
    match std::fs::symlink_metadata(info) {
        // A directory of someone's at the name (not a link to one) is never removed with what
        // is in it: said at once, with the remedy, not taken for a reader's passing refusal.
        Ok(m) if m.is_dir() => std::fs::remove_dir(info).map_err(|_| {
            std::io::Error::other(format!(
                "{0} is a directory, where calicoctl-win keeps the record of who holds the host lock: move it elsewhere or remove it (rmdir /s \"{0}\") and run the command again",
                info.display()
            ))
        })?,
        Ok(m) if !m.file_type().is_file() => remove_name(info)?,
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    // Not CREATE_ALWAYS (`truncate`), which would empty what a hard link names and is refused
    // on a file that is hidden or a system file (CreateFileW remarks); a symbolic link or
    // junction is opened itself (FILE_FLAG_OPEN_REPARSE_POINT), not what it names.
    #[cfg(windows)]
    std::os::windows::fs::OpenOptionsExt::custom_flags(&mut options, 0x0020_0000);
    let file = match options.open(info) {
        // A read-only file is refused for writing (ERROR_ACCESS_DENIED, CreateFileW remarks),
        // also without emptying it: the attribute cleared (SetFileAttributesW), it is opened.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && read_only(info) => {
            let mut p = std::fs::symlink_metadata(info)?.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            p.set_readonly(false);
            std::fs::set_permissions(info, p)?;
            options.open(info)?
        }
        opened => opened?,
    };
    let file = if is_sole_plain_file(&file, info)? {
        file
    } else {
        drop(file);
        remove_name(info)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(info)?
    };
    file.set_len(0)?;
    Ok(file)
}

/// Whether `path` is a plain file marked read-only.
fn read_only(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.permissions().readonly())
}

/// Removes the name `path`: a link to a file or one to a directory.
fn remove_name(path: &Path) -> std::io::Result<()> {
    std::fs::remove_file(path).or_else(|e| std::fs::remove_dir(path).map_err(|_| e))
}

/// Whether the open `file` is a plain file whose one name is `name`.
#[cfg(windows)]
pub(crate) fn is_sole_plain_file(file: &File, _name: &Path) -> std::io::Result<bool> {
    crate::host::windows::files::is_sole_plain_file(file)
}

/// Whether the open `file` is a plain file whose one name is `name`: the file `name` names
/// without following a link (which `open` followed), with no other link to it (`st_nlink`).
#[cfg(unix)]
pub(crate) fn is_sole_plain_file(file: &File, name: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (open, named) = (file.metadata()?, std::fs::symlink_metadata(name)?);
    Ok(named.file_type().is_file()
        && (open.dev(), open.ino()) == (named.dev(), named.ino())
        && open.nlink() == 1)
}

/// Whether an error opening the record may pass: another process has it open and shares no
/// writing (`ERROR_SHARING_VIOLATION`, 32), or locks a part of it (`ERROR_LOCK_VIOLATION`,
/// 33), or it is refused for now (a file being deleted: DeleteFileW remarks).
fn is_transient(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::PermissionDenied
        || (cfg!(windows) && matches!(e.raw_os_error(), Some(32 | 33)))
}

fn info_path(lock: &Path) -> PathBuf {
    lock.with_extension("lock.json")
}

/// Whether process `pid` runs, with when it started where the system says (`running`).
type Running<'a> = dyn Fn(u32) -> Option<Option<u64>> + 'a;

/// What the record says of who holds the lock, judged by whether its writer runs.
enum Said {
    /// Its writer runs: the same process, as the system and the record say when it started.
    Runs(Holder),
    /// Its pid names a running process whose start the system does not say (one this
    /// process may not open) while the record does: maybe its writer, maybe a later process
    /// given the same pid.
    Maybe(Holder),
    /// Empty, cut short or missing: a command that has not written it yet, or a look.
    Unwritten,
    /// Its writer has ended, or its pid names a later process.
    Stale,
}

fn said(lock: &Path, running: &Running<'_>) -> Said {
    let Some(h) = record(lock) else {
        return Said::Unwritten;
    };
    match (running(h.pid), h.process) {
        (None, _) => Said::Stale,
        (Some(Some(now)), Some(then)) if now == then => Said::Runs(h),
        (Some(Some(_)), Some(_)) => Said::Stale,
        // An earlier version's record, which says no start: judged by its pid alone, as that
        // version judged it, at once (a command of that version may hold the lock now).
        (Some(_), None) => Said::Runs(h),
        (Some(None), Some(_)) => Said::Maybe(h),
    }
}

/// Reads who holds the lock, to be asked while it is held: `None` while the holder has not
/// written it yet, and when the record is one a command killed left (its process ended).
pub fn holder(lock: &Path) -> Option<Holder> {
    match said(lock, &running) {
        Said::Runs(h) | Said::Maybe(h) => Some(h),
        Said::Unwritten | Said::Stale => None,
    }
}

fn record(lock: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(info_path(lock)).ok()?;
    serde_json::from_str(&text).ok()
}

/// `%ProgramData%\calicoctl-win`, from the environment captured at start-up.
pub fn windows_state_dir(env: &std::collections::BTreeMap<String, String>) -> PathBuf {
    PathBuf::from(
        env.get("ProgramData")
            .map_or(r"C:\ProgramData", String::as_str),
    )
    .join("calicoctl-win")
}

/// Where calicoctl-win keeps its own state on this machine (the host lock, a detached run's
/// log and result): `%ProgramData%\calicoctl-win` on Windows, a simulated host's directory;
/// `None` for a throw-away in-memory host, which ends with the process.
pub fn state_dir(
    host: &dyn crate::host::Host,
    env: &std::collections::BTreeMap<String, String>,
) -> Option<PathBuf> {
    match host.kind() {
        crate::host::HostKind::Windows => Some(windows_state_dir(env)),
        crate::host::HostKind::Simulated { dir, .. } => Some(PathBuf::from(dir)),
        crate::host::HostKind::InMemory { .. } => None,
    }
}

/// Whether a command holds the lock in `dir` now, without taking it: `Some(holder)` (the
/// holder `None` while it has not written who it is), `None` when nobody does. For commands
/// that only read (`status`), which hold no lock of their own.
pub fn busy(dir: &Path) -> Option<Option<Holder>> {
    busy_with(dir, &running)
}

fn busy_with(dir: &Path, running: &Running<'_>) -> Option<Option<Holder>> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
    let held = wait_for_holder(&file, &path, running);
    // Free: let it go at once. Windows releases a lock left to the closing of its file only
    // when it gets to it ("the time it takes for the operating system to unlock these locks
    // depends upon available system resources": Microsoft's LockFileEx remarks), so a command
    // taking the lock then could find it held by a look. Not taken, nothing is let go.
    let _ = file.unlock();
    match held.ok()? {
        Held::By(h) => Some(h),
        // Held, while the record names one that has ended: a live command holds it that has
        // not written its record yet (its write may wait out a reader that shares no
        // writing), so it is held by one not named, as `acquire` says; never "nobody", which
        // would make a look take a live run's journal for one cut off.
        Held::Stale => Some(None),
        Held::Free => None,
    }
}

/// How a lock was found in a second of looks.
enum Held {
    /// Taken, by the one that looked.
    Free,
    /// Held, by the command named, believed (`Said::Runs`, or `Said::Maybe` all along), or
    /// by one that has not said who it is.
    By(Option<Holder>),
    /// Held, and the record names a command that has ended.
    Stale,
}

/// Tries the lock through `file` and, while another holds it, reads who does, for up to a
/// second: a command writes who it is just after it takes the lock (and the record its killed
/// predecessor left names that one until then), and a look (`busy`, CalicoNode's every
/// minute) holds it only for a moment. It ends early only when taken, or when the record
/// names a command that surely runs: a pid that runs is taken for its writer's only where
/// the system and the record say when it started, and they agree (a later process may have
/// been given the same pid, and one this process may not open says nothing of when), or
/// where the record, an earlier version's, says no start at all (judged by its pid, as that
/// version did).
fn wait_for_holder(file: &File, path: &Path, running: &Running<'_>) -> std::io::Result<Held> {
    use crate::duration::{Look, Pauses, poll_quietly};
    let look = || {
        Ok(match file.try_lock() {
            Ok(()) => Look::Done(Held::Free),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
            Err(std::fs::TryLockError::WouldBlock) => match said(path, running) {
                Said::Runs(h) => Look::Done(Held::By(Some(h))),
                other => Look::Pending(other),
            },
        })
    };
    let pauses = Pauses::every(std::time::Duration::from_millis(50));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    poll_quietly(deadline, pauses, look, |last| {
        Ok(match last {
            Said::Runs(h) | Said::Maybe(h) => Held::By(Some(h)),
            Said::Unwritten => Held::By(None),
            Said::Stale => Held::Stale,
        })
    })
}

/// Whether process `pid` runs, with a mark of when it started where the system says one:
/// `None` once it has ended. On Windows its creation time (`process::running`). On Linux
/// `/proc/PID/stat`, whose third field is the state, `Z` for a zombie (ended, waiting to be
/// reaped) and `X` for a dead one, and whose 22nd the start time in ticks since boot
/// (proc(5)). Elsewhere every process is taken for running, when is not known.
#[cfg(windows)]
fn running(pid: u32) -> Option<Option<u64>> {
    crate::host::windows::process::running(pid)
}

#[cfg(not(windows))]
fn running(pid: u32) -> Option<Option<u64>> {
    if !cfg!(target_os = "linux") {
        return Some(None);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) if state_is_defunct(&stat) => None,
        Ok(stat) => Some(stat_started(&stat)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => Some(None),
    }
}

/// The start time (22nd field) of a `/proc/PID/stat` line, the state being the third.
#[cfg(not(windows))]
fn stat_started(stat: &str) -> Option<u64> {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|t| t.parse().ok())
}

/// The state field of a `/proc/PID/stat` line: after the command, which is in parentheses
/// and may itself hold spaces and parentheses (hence the last `)`).
#[cfg(not(windows))]
fn state_is_defunct(stat: &str) -> bool {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

/// Makes the state directory `dir` if it is missing. On Windows it gets the access list of
/// install's directories (`acl::PROTECTED_DIR`), also when an earlier version made it without:
/// `%ProgramData%` lets every user add files to the folders made in it, and elevated commands
/// write here (the lock, who holds it, a detached run's log and result) and read what is here.
pub fn make_state_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // A link (on Windows a junction, which any user who could add a folder may make) would
    // send what is written here, and the access list set here, wherever it points.
    if std::fs::symlink_metadata(dir)?.file_type().is_symlink() || is_junction(dir)? {
        return Err(std::io::Error::other(format!(
            "{} is a link to another directory, not a directory of calicoctl-win's own: remove the link (rmdir) and run the command again",
            dir.display()
        )));
    }
    #[cfg(windows)]
    protect(dir)?;
    Ok(())
}

/// Whether `dir` is a reparse point (a junction or mount point, which `is_symlink` does not
/// report).
#[cfg(windows)]
fn is_junction(dir: &Path) -> std::io::Result<bool> {
    use std::os::windows::fs::MetadataExt;
    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
    Ok(std::fs::symlink_metadata(dir)?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0)
}

#[cfg(not(windows))]
fn is_junction(_dir: &Path) -> std::io::Result<bool> {
    Ok(false)
}

/// Gives `dir` the protected access list unless it has it.
#[cfg(windows)]
fn protect(dir: &Path) -> std::io::Result<()> {
    use crate::host::{acl, windows::files};
    let path = dir.to_string_lossy();
    let failed = |e: crate::host::HostError| {
        std::io::Error::other(format!(
            "cannot give {path} the access list that lets only SYSTEM and Administrators change it: {e}"
        ))
    };
    let now = files::security(&path).map_err(failed)?;
    if now
        .as_deref()
        .and_then(|s| acl::parse(s).ok())
        .is_some_and(|d| acl::is_protected(&d))
    {
        return Ok(());
    }
    files::set_security(&path, acl::PROTECTED_DIR).map_err(failed)
}

/// Takes the lock in `dir` for `command`, or says who holds it.
pub fn acquire(dir: &Path, command: &str) -> Result<HostLock, LockError> {
    acquire_with(dir, command, &running)
}

fn acquire_with(dir: &Path, command: &str, running: &Running<'_>) -> Result<HostLock, LockError> {
    let path = dir.join(LOCK_FILE);
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    make_state_dir(dir).map_err(io)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match wait_for_holder(&file, &path, running).map_err(io)? {
        Held::Free => {}
        Held::By(holder) => return Err(LockError::Busy { holder, lock: path }),
        // Held still after a second, the record its killed writer left saying nobody: a
        // look's, or a command's that has not written yet.
        Held::Stale => {
            return Err(LockError::Busy {
                holder: None,
                lock: path,
            });
        }
    }
    let info = info_path(&path);
    let me = Holder {
        command: command.to_owned(),
        pid: std::process::id(),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
        process: running(std::process::id()).flatten(),
    };
    let text = serde_json::to_string(&me).unwrap_or_default();
    let record = write_record(&info, text.as_bytes()).map_err(|source| LockError::Io {
        path: info.clone(),
        source,
    })?;
    Ok(HostLock {
        _file: file,
        record,
        info,
    })
}

/// Writes the record of who holds the lock, this command now holding it. Another process may
/// have it open for a moment and share no writing (an editor, a virus scanner): a second to
/// let it go.
fn write_record(info: &Path, text: &[u8]) -> std::io::Result<File> {
    use crate::duration::{Look, Pauses, poll_quietly};
    use std::io::Write;
    let look = || match open_record(info) {
        Ok(file) => Ok(Look::Done(file)),
        Err(e) if is_transient(&e) => Ok(Look::Pending(e)),
        Err(e) => Err(e),
    };
    let pauses = Pauses::every(std::time::Duration::from_millis(50));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut file = poll_quietly(deadline, pauses, look, Err)?;
    file.write_all(text)?;
    Ok(file)
}

impl crate::error::Diagnose for LockError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Exit, Kind};
        let (exit, kind) = match self {
            Self::Busy { .. } => (Exit::Busy, Kind::Locked),
            Self::Io { .. } => (Exit::Failed, Kind::LockFailed),
        };
        crate::error::Diagnosis::new(exit, kind, self.hint())
    }
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;
