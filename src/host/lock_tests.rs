//! The host lock's tests: taken, refused, let go; who holds it, and records that say it no more.

use super::*;

#[cfg(not(windows))]
#[test]
fn a_zombie_or_dead_process_is_defunct_on_linux() {
    let defunct = |pid| running(pid).is_none();
    let stat = "4242 (a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000";
    assert_eq!(stat_running(stat), Some(Some(98765)));
    assert_eq!(stat_running("4242 (a) S 1"), Some(None));
    assert_eq!(stat_running("4242 (calicoctl-win) Z 1 4242"), None);
    assert_eq!(stat_running("4242 (a) b) X 1"), None);
    assert_eq!(stat_running("4242 (name with ) Z) R 1"), Some(None));
    assert_eq!(stat_running(""), Some(None));
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
        // Symbolic links need privilege on Windows; Wine's CreateSymbolicLinkW is a stub.
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
    // As an earlier version could leave it, here opened to everyone.
    files::set_security(
        &path,
        "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;WD)",
    )
    .expect("open it");
    // Wine keeps only a Unix mode: there only Everyone's write is seen to go.
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

/// The command the record names as holding the lock in `dir`.
fn held_by(dir: &Path) -> Option<String> {
    holder(&dir.join(LOCK_FILE)).map(|h| h.command)
}

/// `f`'s first success within 10 s. A process another test spawns keeps a copy of a dropped
/// lock's descriptor from its fork to its exec (O_CLOEXEC closes it only then).
fn within_10s<T, E: std::fmt::Debug>(mut f: impl FnMut() -> Result<T, E>) -> T {
    let start = std::time::Instant::now();
    loop {
        match f() {
            Ok(t) => return t,
            Err(e) if start.elapsed() > std::time::Duration::from_secs(10) => panic!("{e:?}"),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
}

/// Takes the lock again just after it was let go (`within_10s`).
fn take_again(dir: &Path, command: &str) -> HostLock {
    within_10s(|| acquire(dir, command))
}

/// A look reading the record as its command lets the lock go never stops the next command
/// (DeleteFileW remarks: a file being deleted cannot be opened).
#[test]
fn a_look_reading_who_holds_the_lock_never_stops_the_next_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = acquire(dir.path(), "install").expect("first");
    let look = File::open(info_path(&dir.path().join(LOCK_FILE))).expect("the record");
    drop(first);
    let second = take_again(dir.path(), "repair");
    assert_eq!(held_by(dir.path()).as_deref(), Some("repair"));
    drop(look);
    drop(second);
}

/// A link where the record goes (a hard one, or a symbolic one on Unix) is removed, never
/// written through: what it names is left as it was.
#[test]
fn a_link_in_place_of_the_record_is_not_written_through() {
    type Link = fn(&Path, &Path) -> std::io::Result<()>;
    let links: Vec<Link> = vec![
        |a, b| std::fs::hard_link(a, b),
        #[cfg(unix)]
        |a, b| std::os::unix::fs::symlink(a, b),
    ];
    for link in links {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "kept").expect("elsewhere");
        let info = info_path(&dir.path().join(LOCK_FILE));
        link(&elsewhere, &info).expect("link");
        let lock = acquire(dir.path(), "install").expect("lock");
        assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "kept");
        assert!(std::fs::symlink_metadata(&info).expect("record").is_file());
        assert_eq!(held_by(dir.path()).as_deref(), Some("install"));
        drop(lock);
        assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "kept");
        assert_eq!(std::fs::read_to_string(&info).expect("record"), "");
    }
}

/// A record written while another process holds the lock, as a look holds it.
fn hold_with_record(dir: &Path, record: &str) -> File {
    drop(acquire(dir, "install").expect("the lock file made"));
    let path = dir.join(LOCK_FILE);
    let look = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    within_10s(|| look.try_lock());
    std::fs::write(info_path(&path), record).expect("record");
    look
}

const DEAD: u32 = 4_000_001;
const LIVE: u32 = 4_000_002;

/// A command taking a killed predecessor's lock is named by a look once it writes, never
/// "nobody".
#[test]
fn a_look_waits_for_the_holder_to_replace_a_dead_ones_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dead = format!(r#"{{"command":"install","pid":{DEAD},"started":1,"process":5}}"#);
    let look = hold_with_record(dir.path(), &dead);
    let info = info_path(&dir.path().join(LOCK_FILE));
    let live = format!(r#"{{"command":"repair","pid":{LIVE},"started":2,"process":7}}"#);
    // The new holder writes its record once the look has read the dead one's.
    let running = |pid| {
        if pid == DEAD {
            std::fs::write(&info, &live).expect("the live record");
        }
        (pid == LIVE).then_some(Some(7))
    };
    let found = busy_with(dir.path(), &running);
    assert_eq!(
        found.flatten().map(|h| (h.command, h.pid)),
        Some(("repair".to_owned(), LIVE))
    );
    drop(look);
}

/// A record whose pid runs with an unknown start may be a later process: a command waits for
/// the lock rather than stop at once naming it.
#[test]
fn a_holder_whose_start_is_unknown_is_not_taken_for_sure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let record = format!(r#"{{"command":"install","pid":{DEAD},"started":1,"process":5}}"#);
    let look = hold_with_record(dir.path(), &record);
    // The look lets go once the record is judged (explicitly: LockFileEx remarks).
    let running = |pid| {
        if pid == DEAD {
            let _ = look.unlock();
            return Some(None);
        }
        running(pid)
    };
    let lock = acquire_with(dir.path(), "repair", &running).expect("taken once let go");
    assert_eq!(held_by(dir.path()).as_deref(), Some("repair"));
    drop(lock);
    // Held on, such a holder is named in the end: who holds the lock, as far as is known.
    let look = hold_with_record(dir.path(), &record);
    let maybe = |pid| (pid == DEAD).then_some(None);
    let e = acquire_with(dir.path(), "repair", &maybe).expect_err("held");
    assert!(
        matches!(&e, LockError::Busy { holder: Some(h), .. } if h.pid == DEAD),
        "{e}"
    );
    drop(look);
}

/// An ended process (its `Child` kept, so its Windows process object stays).
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

/// A killed command's record never names it: not while a look holds the lock, nor when its
/// pid now names a later process.
#[cfg(any(windows, target_os = "linux"))]
#[test]
fn a_record_left_by_a_dead_command_never_names_the_holder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(LOCK_FILE);
    let mut dead = ended_process();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    // A look holds the lock throughout.
    let look = hold_with_record(dir.path(), "");
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
        // Held by one not named (here a look), never "nobody" while it is held.
        assert_eq!(busy(dir.path()), Some(None), "{record}");
    }
    // Closed, it lets go (LockFileEx remarks), `take_again` waiting for the moment.
    drop(look);
    drop(take_again(dir.path(), "repair"));
    // Kept until here, so that its process object stays on Windows; waited already.
    dead.wait().expect("ended");
}

/// A look that only tests the lock never makes a command taking it fail as busy.
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

/// A reader sharing no writing delays the record; the command writes it once let go.
#[cfg(windows)]
#[test]
fn a_reader_that_shares_no_writing_only_delays_the_record() {
    use std::os::windows::fs::OpenOptionsExt;
    const FILE_SHARE_READ: u32 = 1;
    let dir = tempfile::tempdir().expect("tempdir");
    drop(acquire(dir.path(), "install").expect("the record made"));
    let info = info_path(&dir.path().join(LOCK_FILE));
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ)
        .open(&info)
        .expect("reader");
    let refused = std::fs::OpenOptions::new().write(true).open(&info).is_err();
    let letting_go = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(reader);
    });
    // Not `take_again`, which would take it again after a refusal.
    let lock = acquire(dir.path(), "repair").expect("written once the reader let go");
    letting_go.join().expect("reader");
    assert!(
        refused,
        "Windows refuses a writer beside a reader that shares no writing"
    );
    assert_eq!(held_by(dir.path()).as_deref(), Some("repair"));
    drop(lock);
}

/// An earlier version's record (no start): a live pid is its writer at once (one look).
#[test]
fn an_earlier_versions_record_is_judged_by_its_pid_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let record = format!(r#"{{"command":"install","pid":{LIVE},"started":1}}"#);
    let look = hold_with_record(dir.path(), &record);
    let asked = std::cell::Cell::new(0);
    let running = |pid| {
        asked.set(asked.get() + 1);
        (pid == LIVE).then_some(Some(7))
    };
    let e = acquire_with(dir.path(), "repair", &running).expect_err("held");
    assert!(
        matches!(&e, LockError::Busy { holder: Some(h), .. } if h.pid == LIVE),
        "{e}"
    );
    assert_eq!(asked.get(), 1, "the record was looked at more than once");
    asked.set(0);
    let found = busy_with(dir.path(), &running).flatten();
    assert_eq!(found.map(|h| h.pid), Some(LIVE));
    assert_eq!(asked.get(), 1, "the record was looked at more than once");
    drop(look);
}
