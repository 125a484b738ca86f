//! One command at a time changes a host. `install`, `uninstall`, `reconfigure` and the `fetch`
//! commands that write take an exclusive lock on a file before they read the state they plan
//! from; a second command finds it held and stops at once, naming the command that holds it.
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
    info: PathBuf,
}

impl Drop for HostLock {
    fn drop(&mut self) {
        // Nobody holds it now; both files stay (see the module documentation).
        let _ = write_record(&self.info, b"");
    }
}

/// Writes who holds the lock over what the record said, in place (see the module
/// documentation). A look reading it meanwhile finds it empty or cut short, which says nobody.
fn write_record(info: &Path, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    // A link put there before the directory was protected is removed, never written through
    // (removing a link removes the link, not what it names: DeleteFileW remarks); nobody but
    // an administrator may add one since.
    if std::fs::symlink_metadata(info).is_ok_and(|m| !m.file_type().is_file()) {
        std::fs::remove_file(info)?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(info)?
        .write_all(text)
}

fn info_path(lock: &Path) -> PathBuf {
    lock.with_extension("lock.json")
}

/// Reads who holds the lock, to be asked while it is held: `None` while the holder has not
/// written it yet, and when the record is one a command killed left (its process ended).
pub fn holder(lock: &Path) -> Option<Holder> {
    record(lock).filter(writer_runs)
}

fn record(lock: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(info_path(lock)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether the process that wrote `h` still runs: its pid names a running process, and the
/// same one where both the record and the system say when it started.
fn writer_runs(h: &Holder) -> bool {
    running(h.pid).is_some_and(|now| h.process.is_none() || now.is_none() || now == h.process)
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
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
    match file.try_lock() {
        // Free: let it go at once. Windows releases a lock left to the closing of its file
        // only when it gets to it ("the time it takes for the operating system to unlock
        // these locks depends upon available system resources": Microsoft's LockFileEx
        // remarks), so a command taking the lock then could find it held by a look.
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        // A holder that has been killed keeps the lock until the kernel has closed its files;
        // once it has become a zombie (or is gone) it changes nothing any more.
        Err(std::fs::TryLockError::WouldBlock) => match record(&path) {
            Some(h) if !writer_runs(&h) => None,
            h => Some(h),
        },
        Err(std::fs::TryLockError::Error(_)) => None,
    }
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
    if let Err(e) = file.try_lock() {
        if let std::fs::TryLockError::Error(e) = e {
            return Err(io(e));
        }
        // Held: by a command, which writes who it is just after it takes the lock, or for a
        // moment by a look that only tests it (`busy`, CalicoNode's every minute). A second
        // to take it once let go, or to read who holds it: taken in the end, `None`; still
        // held, `Some` with who holds it, when written.
        use crate::duration::{Look, Pauses, poll_quietly};
        let look = || {
            Ok::<_, std::io::Error>(match file.try_lock() {
                Ok(()) => Look::Done(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
                // A record its killed writer left says nobody (`holder`): the lock is a look's
                // or a command's that has not written yet.
                Err(std::fs::TryLockError::WouldBlock) => match holder(&path) {
                    Some(h) => Look::Done(Some(Some(h))),
                    None => Look::Pending(()),
                },
            })
        };
        let pauses = Pauses::every(std::time::Duration::from_millis(50));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let found = poll_quietly(deadline, pauses, look, |()| Ok(Some(None))).map_err(io)?;
        if let Some(holder) = found {
            return Err(LockError::Busy { holder, lock: path });
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
    write_record(&info, text.as_bytes()).map_err(|e| LockError::Io {
        path: info.clone(),
        source: e,
    })?;
    Ok(HostLock { _file: file, info })
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
mod tests {
    use super::*;

    #[test]
    fn a_zombie_or_dead_process_is_defunct_and_a_running_one_is_not() {
        assert!(running(std::process::id()).is_some());
        #[cfg(windows)]
        assert!(running(ended_process().id()).is_none());
    }

    #[cfg(not(windows))]
    #[test]
    fn a_zombie_or_dead_process_is_defunct_on_linux() {
        let defunct = |pid| running(pid).is_none();
        let stat = "4242 (a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000";
        assert_eq!(stat_started(stat), Some(98765));
        assert_eq!(stat_started("4242 (a) S 1"), None);
        assert!(state_is_defunct("4242 (calicoctl-win) Z 1 4242"));
        assert!(state_is_defunct("4242 (a) b) X 1"));
        assert!(!state_is_defunct("4242 (calicoctl-win) S 1 4242"));
        assert!(!state_is_defunct("4242 (name with ) Z) R 1"));
        assert!(!state_is_defunct(""));
        // A zombie: a child that ended and is not reaped yet.
        #[cfg(target_os = "linux")]
        {
            let mut child = std::process::Command::new("true").spawn().expect("true");
            let pid = child.id();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !defunct(pid) {
                assert!(std::time::Instant::now() < deadline, "never a zombie");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            child.wait().expect("reap");
            assert!(defunct(pid) || std::fs::metadata(format!("/proc/{pid}")).is_ok());
        }
    }

    #[test]
    fn a_state_dir_that_is_a_link_is_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("dir");
        let link = tmp.path().join("state");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&elsewhere, &link).expect("link");
        #[cfg(windows)]
        if std::os::windows::fs::symlink_dir(&elsewhere, &link).is_err()
            || std::fs::symlink_metadata(&link).is_err()
        {
            // Windows lets only a privileged or developer-mode user make a symbolic link;
            // Wine makes none at all, though it says it did (CreateSymbolicLinkW in
            // dlls/kernelbase/file.c at wine-8.0 is a stub that returns TRUE).
            eprintln!("skipped: no symbolic link could be made here, so there is none to refuse");
            return;
        }
        let e = acquire(&link, "test").expect_err("a link is refused");
        assert!(e.to_string().contains("is a link"), "{e}");
        assert!(!elsewhere.join(LOCK_FILE).exists());
        assert!(make_state_dir(&elsewhere).is_ok());
    }

    /// Under Wine too (tools/wine/test.sh), which maps an access list onto the Unix mode.
    #[cfg(windows)]
    #[test]
    fn the_state_dir_is_protected_when_the_lock_is_taken() {
        use crate::host::{acl, windows::files};
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).expect("dir");
        let path = dir.to_string_lossy().into_owned();
        // As an earlier version could leave it (made with %ProgramData%'s access list, where
        // every user may add files), here opened to everyone outright.
        files::set_security(
            &path,
            "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;WD)",
        )
        .expect("open it");
        // Wine keeps no access list, only the Unix mode it maps one onto (its owner reads
        // back as a user of its own): there only Everyone's right to write is seen to go.
        let full_acl = !crate::host::contract::on_windows::under_wine();
        let others_write = || {
            let sddl = files::security(&path).expect("read").expect("there");
            let d = acl::parse(&sddl).unwrap_or_else(|e| panic!("{sddl}: {e}"));
            let writers = acl::writers(&d);
            let everyone = writers.iter().any(|w| w.starts_with("Everyone"));
            (everyone || (full_acl && !writers.is_empty()), writers)
        };
        assert!(others_write().0, "{:?}", others_write().1);
        let lock = acquire(&dir, "test").expect("lock");
        assert!(!others_write().0, "{:?}", others_write().1);
        drop(lock);
        // Taken again, it stays so.
        drop(acquire(&dir, "test").expect("lock"));
        assert!(!others_write().0, "{:?}", others_write().1);
    }

    /// Takes the lock in `dir` again just after it was let go. Other tests of this process
    /// fork children, which hold a copy of the locked file until they exec: the lock may
    /// outlive its holder by that moment.
    fn take_again(dir: &Path, command: &str) -> HostLock {
        let mut again = acquire(dir, command);
        for _ in 0..100 {
            if again.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            again = acquire(dir, command);
        }
        again.expect("released")
    }

    #[test]
    fn a_second_taker_is_refused_with_the_holder_and_takes_it_once_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = acquire(dir.path(), "install").expect("first");
        let err = acquire(dir.path(), "uninstall").expect_err("held");
        let text = err.to_string();
        assert!(
            text.contains(&format!("install (pid {}", std::process::id())),
            "{text}"
        );
        assert!(matches!(&err, LockError::Busy { holder: Some(h), .. } if h.command == "install"));
        drop(first);
        assert_eq!(holder(&dir.path().join(LOCK_FILE)), None);
        let again = take_again(dir.path(), "uninstall");
        assert_eq!(
            holder(&dir.path().join(LOCK_FILE)).map(|h| h.command),
            Some("uninstall".into())
        );
        drop(again);
    }

    /// A look reads who holds the lock (`busy`, CalicoNode's every minute) just as that
    /// command lets it go: the next command still takes it. Windows only marks a file deleted
    /// while another has it open, and refuses to open it again until that one closes it
    /// (Microsoft's DeleteFileW remarks), which a record deleted and written anew met.
    #[test]
    fn a_look_reading_who_holds_the_lock_never_stops_the_next_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = acquire(dir.path(), "install").expect("first");
        let look = File::open(info_path(&dir.path().join(LOCK_FILE))).expect("the record");
        drop(first);
        let second = take_again(dir.path(), "repair");
        assert_eq!(
            holder(&dir.path().join(LOCK_FILE)).map(|h| h.command),
            Some("repair".into())
        );
        drop(look);
        drop(second);
    }

    /// A link where the record goes, as one a user could put there before the directory was
    /// protected, is replaced, and what it names left as it was.
    #[cfg(unix)]
    #[test]
    fn a_link_in_place_of_the_record_is_not_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "kept").expect("elsewhere");
        let info = info_path(&dir.path().join(LOCK_FILE));
        std::os::unix::fs::symlink(&elsewhere, &info).expect("link");
        let lock = acquire(dir.path(), "install").expect("lock");
        assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "kept");
        assert!(std::fs::symlink_metadata(&info).expect("record").is_file());
        assert_eq!(
            holder(&dir.path().join(LOCK_FILE)).map(|h| h.command),
            Some("install".into())
        );
        drop(lock);
        assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "kept");
    }

    /// A process that has ended: a child that ran and was waited for. Its `Child` is kept,
    /// so that on Windows its process object stays (an ended process that is still known).
    fn ended_process() -> std::process::Child {
        #[cfg(windows)]
        let mut child = std::process::Command::new("cmd.exe")
            .args(["/c", "exit 0"])
            .spawn()
            .expect("cmd");
        #[cfg(unix)]
        let mut child = std::process::Command::new("true").spawn().expect("true");
        child.wait().expect("ended");
        child
    }

    /// A command killed leaves its record of who holds the lock; the lock itself went with
    /// it. A look that holds the lock for a moment then makes the next command wait, never
    /// name the dead one; nor is a record taken for the holder's when its pid now names
    /// another process (one that started after the record was written).
    #[cfg(any(windows, target_os = "linux"))]
    #[test]
    fn a_record_left_by_a_dead_command_never_names_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(acquire(dir.path(), "install").expect("the lock file made"));
        let path = dir.path().join(LOCK_FILE);
        let mut dead = ended_process();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        // A look holds the lock throughout.
        let look = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        look.try_lock().expect("the look takes it");
        let records = [
            format!(
                r#"{{"command":"install","pid":{},"started":{now}}}"#,
                dead.id()
            ),
            // This process, but not as it started: its pid reused.
            format!(
                r#"{{"command":"install","pid":{},"started":{now},"process":1}}"#,
                std::process::id()
            ),
        ];
        for record in records {
            std::fs::write(info_path(&path), &record).expect("record");
            let e = acquire(dir.path(), "repair").expect_err("the look holds it");
            assert!(
                matches!(e, LockError::Busy { holder: None, .. }),
                "{record}: {e}"
            );
            assert_eq!(holder(&path), None, "{record}");
            assert_eq!(busy(dir.path()), None, "{record}");
        }
        // Closed, it lets go (LockFileEx remarks), `take_again` waiting for the moment.
        drop(look);
        drop(take_again(dir.path(), "repair"));
        // Kept until here, so that its process object stays on Windows; waited already.
        dead.wait().expect("ended");
    }

    /// A look that only tests the lock (CalicoNode's, every minute) never makes a command
    /// that takes it then fail as though another command held it.
    #[test]
    fn a_command_takes_the_lock_while_a_look_tests_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(acquire(dir.path(), "install").expect("the lock file made"));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = busy(dir.path());
                }
            });
            let mut refused = 0;
            for _ in 0..5000 {
                match acquire(dir.path(), "repair") {
                    Ok(lock) => drop(lock),
                    Err(e) => {
                        refused += 1;
                        eprintln!("{e}");
                        break;
                    }
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(refused, 0);
        });
    }
}
