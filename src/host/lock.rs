//! One command at a time changes a host: `install`, `uninstall`, `reconfigure` and the
//! writing `fetch` commands take an exclusive lock (`File::try_lock`: `LockFileEx`, `flock`)
//! before they plan; a second stops within a second, naming the holder. The lock dies with
//! its process. Who holds it is written beside it (`<lock>.json`), overwritten in place and
//! emptied on release, never deleted (DeleteFileW remarks); a killed command's is not reported.

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
    /// When its process started (`running`): with the pid it names that process alone.
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

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct HostLock {
    _file: File,
    /// The record, kept open to empty it on release (reopening could be refused).
    record: File,
    info: PathBuf,
}

impl Drop for HostLock {
    fn drop(&mut self) {
        // Nobody holds it now; both files stay. A full record names an ended process.
        if let Err(e) = self.record.set_len(0) {
            eprintln!(
                "warning: cannot empty {}, which says who holds the host lock: {e}",
                self.info.display()
            );
        }
    }
}

/// Opens the record to write over in place, emptied. A link at its name (made before the
/// directory was protected) is removed, never written through.
fn open_record(info: &Path) -> std::io::Result<File> {
    if std::fs::symlink_metadata(info).is_ok_and(|m| !m.file_type().is_file()) {
        remove_name(info)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    // Not `truncate`, which would empty what a hard link names; a link is opened itself
    // (FILE_FLAG_OPEN_REPARSE_POINT).
    #[cfg(windows)]
    std::os::windows::fs::OpenOptionsExt::custom_flags(&mut options, 0x0020_0000);
    let file = options.open(info)?;
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

/// Removes the name `path`: a link to a file or one to a directory.
fn remove_name(path: &Path) -> std::io::Result<()> {
    std::fs::remove_file(path).or_else(|e| std::fs::remove_dir(path).map_err(|_| e))
}

/// Whether the open `file` is a plain file whose one name is `name`.
#[cfg(windows)]
pub(crate) fn is_sole_plain_file(file: &File, _name: &Path) -> std::io::Result<bool> {
    crate::host::windows::files::is_sole_plain_file(file)
}

/// Whether the open `file` is `name`'s plain file, not followed through a link, one link only.
#[cfg(unix)]
pub(crate) fn is_sole_plain_file(file: &File, name: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (open, named) = (file.metadata()?, std::fs::symlink_metadata(name)?);
    Ok(named.file_type().is_file()
        && (open.dev(), open.ino()) == (named.dev(), named.ino())
        && open.nlink() == 1)
}

/// Whether an error opening the record may pass: a sharing (32) or lock (33) violation, or
/// a refusal for now (a file being deleted).
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
    /// Its pid runs but the system does not say its start while the record does: maybe its
    /// writer, maybe a later process.
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
        // An earlier version's record says no start: judged by its pid, as that version did.
        (Some(_), None) => Said::Runs(h),
        (Some(None), Some(_)) => Said::Maybe(h),
    }
}

/// Who holds the lock: `None` until the holder writes, and for a killed command's record.
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

/// Where calicoctl-win keeps its own state (the host lock, a detached run's log and result):
/// `%ProgramData%\calicoctl-win`, a simulated host's directory, or `None` in memory.
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

/// Whether a command holds the lock in `dir` now, without taking it (for `status`):
/// `Some(holder)`, the holder `None` until written; `None` when nobody does.
pub fn busy(dir: &Path) -> Option<Option<Holder>> {
    busy_with(dir, &running)
}

fn busy_with(dir: &Path, running: &Running<'_>) -> Option<Option<Holder>> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
    let held = wait_for_holder(&file, &path, running);
    // Free: let it go at once; Windows may release a lock left to the file's close late
    // (Microsoft's LockFileEx remarks).
    let _ = file.unlock();
    match held.ok()? {
        Held::By(h) => Some(h),
        Held::Free => None,
    }
}

/// How a lock was found in a second of looks.
enum Held {
    /// Taken, by the one that looked.
    Free,
    /// Held by the command named, believed, or by one not yet named (also while the record
    /// names an ended command: a live one, or a look, has not written yet).
    By(Option<Holder>),
}

/// Tries the lock and, while another holds it, reads who does, for up to a second. It ends
/// early when taken, or when the record names a command that surely runs: pid and start
/// agree, or an earlier version's record gives no start.
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
            Said::Unwritten | Said::Stale => Held::By(None),
        })
    })
}

/// Whether process `pid` runs, with its start where the system says: Windows' creation time,
/// Linux's `/proc/PID/stat` (state `Z`/`X` is ended; field 22 the start, proc(5)).
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
        Ok(stat) => stat_running(&stat),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => Some(None),
    }
}

/// A `/proc/PID/stat` line as `running` answers: `None` in state Z or X (the third field),
/// else the start (the 22nd), both counted after the last `)`, which ends the command.
#[cfg(not(windows))]
fn stat_running(stat: &str) -> Option<Option<u64>> {
    let mut fields = stat
        .rsplit_once(')')
        .map_or("", |(_, r)| r)
        .split_whitespace();
    match fields.next() {
        Some("Z" | "X") => None,
        _ => Some(fields.nth(18).and_then(|t| t.parse().ok())),
    }
}

/// Makes the state directory `dir`, on Windows with `acl::PROTECTED_DIR`: `%ProgramData%` lets
/// every user add files to its folders, and elevated commands read what is here.
pub fn make_state_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // A link (a junction any user may make) would send what is written here elsewhere.
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

/// Whether `dir` is a reparse point (a junction, which `is_symlink` does not report).
#[cfg(windows)]
fn is_junction(dir: &Path) -> std::io::Result<bool> {
    crate::host::windows::files::is_reparse_point(&dir.to_string_lossy())
        .map_err(std::io::Error::other)
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

/// Writes the record of who holds the lock; a process holding it open without sharing
/// writing (an editor, a virus scanner) gets a second to let it go.
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
        use crate::error::{Diagnosis, Exit, Kind};
        match self {
            Self::Busy { lock, .. } => Diagnosis::new(
                Exit::Busy,
                Kind::Locked,
                format!(
                    "nothing was changed; wait for that command to finish and run this one again (the lock is {}; it goes with its process, also when that is killed)",
                    lock.display()
                ),
            ),
            Self::Io { .. } => Diagnosis::new(
                Exit::Failed,
                Kind::LockFailed,
                "run calicoctl-win from an elevated prompt, or check that the directory is writable",
            ),
        }
    }
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;
