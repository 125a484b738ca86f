//! The service log, `<logs dir>\calico-<role>.log`, rotated by size and age as NSSM did, to
//! `calico-<role>-<UTC time>.log`; the newest `keep` stay.

use crate::host::{EventLevel, LineSink};
use crate::installed::logs::rotated_key;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// When the log rotates and how many old files stay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSettings {
    pub max_size: u64,
    pub rotate_every: Duration,
    pub keep: usize,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            max_size: 10 * 1024 * 1024,
            rotate_every: Duration::from_secs(86_400),
            keep: 10,
        }
    }
}

/// Parses a size: bytes, or a number with KB, MB or GB (powers of 1024), like `10MB`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad =
        || format!("{text:?} is not a size: use bytes or a number with KB, MB or GB, like 10MB");
    let upper = t.to_ascii_uppercase();
    let (digits, unit) = match upper.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => upper.split_at(i),
        None => (upper.as_str(), ""),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" | "K" => 1024,
        "MB" | "M" => 1024 * 1024,
        "GB" | "G" => 1024 * 1024 * 1024,
        _ => return Err(bad()),
    };
    n.checked_mul(unit).filter(|v| *v > 0).ok_or_else(bad)
}

/// The wall clock; tests pass a controlled one to rotate by day.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// A log file that rotates between writes.
struct RotatingFile {
    path: PathBuf,
    file: Option<std::fs::File>,
    size: u64,
    opened: SystemTime,
    settings: LogSettings,
    clock: Clock,
    /// Renames the full log aside (std::fs::rename; tests pass one that fails as Windows does).
    rename: fn(&Path, &Path) -> std::io::Result<()>,
    /// After a rotation that could not rename, when to try again.
    retry_at: Option<SystemTime>,
}

/// How long after a failed rotation the next is tried.
const ROTATE_RETRY: Duration = Duration::from_secs(60);

impl RotatingFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let now = (self.clock)();
        if self.file.is_none() {
            self.open(now)?;
        }
        let too_big = self.size > 0 && self.size + bytes.len() as u64 > self.settings.max_size;
        let too_old = self.size > 0
            && now
                .duration_since(self.opened)
                .is_ok_and(|age| age >= self.settings.rotate_every);
        let may_rotate = self.retry_at.is_none_or(|at| now >= at);
        if (too_big || too_old) && may_rotate {
            self.rotate(now)?;
        }
        if let Some(f) = &mut self.file {
            f.write_all(bytes)?;
            self.size += bytes.len() as u64;
        }
        Ok(())
    }

    fn open(&mut self, now: SystemTime) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let meta = f.metadata()?;
        self.size = meta.len();
        // Its age is its first line's time: NTFS tunnelling gives a new file the rotated one's
        // creation time (Microsoft's "File Times").
        self.opened = if self.size > 0 {
            first_line_time(&self.path).unwrap_or(now)
        } else {
            now
        };
        self.file = Some(f);
        Ok(())
    }

    fn rotate(&mut self, now: SystemTime) -> std::io::Result<()> {
        self.file = None;
        let stem = self
            .path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let dir = self.path.parent().map(Path::to_owned).unwrap_or_default();
        let stamp = utc_stamp(now, "%Y%m%dT%H%M%SZ");
        let mut target = dir.join(format!("{stem}-{stamp}.log"));
        let mut n = 1;
        while target.exists() {
            target = dir.join(format!("{stem}-{stamp}.{n}.log"));
            n += 1;
        }
        if let Err(e) = (self.rename)(&self.path, &target) {
            // A reader without FILE_SHARE_DELETE makes the rename fail: go on in the same
            // file and try again later, dropping no line.
            self.retry_at = Some(now + ROTATE_RETRY);
            self.open(now)?;
            return self.note(now, &format!(
                "cannot rotate the log to {} ({e}): a reader may hold it without FILE_SHARE_DELETE; it goes on here and rotation is tried again in {}s",
                target.display(),
                ROTATE_RETRY.as_secs()
            ));
        }
        self.retry_at = None;
        // The new file first: an old log that cannot be removed costs a warning, never a line.
        self.open(now)?;
        if let Err(e) = prune(&dir, &stem, self.settings.keep) {
            return self.note(
                now,
                &format!("cannot remove an old log ({e}): it is tried again at the next rotation"),
            );
        }
        Ok(())
    }

    /// Writes a warning line of its own (a rotation's trouble) at `now`.
    fn note(&mut self, now: SystemTime, warning: &str) -> std::io::Result<()> {
        let stamp = utc_stamp(now, "%Y-%m-%dT%H:%M:%SZ");
        let line = format!("{stamp} [calicoctl-win] warning: {warning}\n");
        if let Some(f) = &mut self.file {
            f.write_all(line.as_bytes())?;
            self.size += line.len() as u64;
        }
        Ok(())
    }
}

/// The time of a log's first line; `None` when a child's line came first.
fn first_line_time(path: &Path) -> Option<SystemTime> {
    use std::io::Read as _;
    let mut head = [0u8; 20];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    let text = std::str::from_utf8(&head).ok()?;
    let t: jiff::Timestamp = text.parse().ok()?;
    Some(SystemTime::from(t))
}

/// Removes the oldest rotated files beyond `keep` (in the order `installed::logs` reads them);
/// the first failure returned.
fn prune(dir: &Path, stem: &str, keep: usize) -> std::io::Result<()> {
    let mut old: Vec<_> = fs_err::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|e| {
            Some((
                rotated_key(&e.file_name().to_string_lossy(), stem)?,
                e.path(),
            ))
        })
        .collect();
    old.sort();
    let excess = old.len().saturating_sub(keep);
    let mut failed = Ok(());
    for (_, p) in &old[..excess] {
        if let Err(e) = fs_err::remove_file(p) {
            failed = failed.and(Err(e));
        }
    }
    failed
}

/// `now` in UTC with a strftime format.
pub fn utc_stamp(now: SystemTime, format: &str) -> String {
    jiff::Timestamp::try_from(now)
        .map(|t| t.strftime(format).to_string())
        .unwrap_or_else(|_| "unknown-time".into())
}

/// The service log, shared by the body and the output threads; `echo` copies to stderr.
#[derive(Clone)]
pub struct Log {
    file: Arc<Mutex<RotatingFile>>,
    echo: bool,
}

impl Log {
    pub fn open(path: PathBuf, settings: LogSettings, echo: bool) -> Self {
        Self::with_clock(path, settings, echo, Arc::new(SystemTime::now))
    }

    pub fn with_clock(path: PathBuf, settings: LogSettings, echo: bool, clock: Clock) -> Self {
        Self {
            file: Arc::new(Mutex::new(RotatingFile {
                path,
                file: None,
                size: 0,
                opened: SystemTime::UNIX_EPOCH,
                settings,
                clock,
                rename: |from, to| fs_err::rename(from, to),
                retry_at: None,
            })),
            echo,
        }
    }

    pub fn info(&self, message: &str) {
        self.line("info", message);
    }

    pub fn warn(&self, message: &str) {
        self.line("warning", message);
    }

    fn line(&self, level: &str, message: &str) {
        let now = {
            let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
            (f.clock)()
        };
        let stamp = utc_stamp(now, "%Y-%m-%dT%H:%M:%SZ");
        self.raw(format!("{stamp} [calicoctl-win] {level}: {message}\n").as_bytes());
    }

    /// Writes bytes as they are (a line of the child's output).
    pub fn raw(&self, bytes: &[u8]) {
        if self.echo {
            let _ = std::io::stderr().write_all(bytes);
        }
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.write(bytes) {
            // Nowhere else to report it: a service has no terminal. Keep running.
            let _ = writeln!(
                std::io::stderr(),
                "cannot write the log {}: {e}",
                f.path.display()
            );
        }
    }

    /// Writes an event of calicoctl-win's source to the Application event log; a failure is
    /// said here.
    pub fn event(&self, host: &dyn crate::host::Host, level: EventLevel, id: u32, message: &str) {
        let sent = host.report_event(crate::layout::EVENT_SOURCE, level, id, message);
        self.failed("cannot write to the Application event log", sent);
    }

    /// A failure to keep or say something beside the service's work: warned as `what: error`,
    /// never more.
    pub fn failed<T, E: std::fmt::Display>(&self, what: &str, r: Result<T, E>) {
        if let Err(e) = r {
            self.warn(&format!("{what}: {e}"));
        }
    }

    /// `duration::poll_until` for `what`, within `timeout`, its lines said in this log.
    pub fn poll_until<T, P, E: From<crate::duration::Stopped>>(
        &self,
        (what, timeout, pauses): (&str, Duration, crate::duration::Pauses),
        stop: &crate::duration::Stop,
        look: impl FnMut() -> Result<crate::duration::Look<T, P>, E>,
        timed_out: impl FnOnce(P) -> Result<T, E>,
    ) -> Result<T, E> {
        let say = &mut |l: &str| self.info(l);
        let wait = crate::duration::Wait {
            what,
            timeout,
            pauses,
            stop,
            say,
        };
        crate::duration::poll_until(wait, look, timed_out)
    }

    /// Where a child's stdout and stderr go: this log, line by line.
    pub fn sink(&self) -> LineSink {
        let log = self.clone();
        LineSink::new(move |line| log.raw(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs_err::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("10MB"), Ok(10 * 1024 * 1024));
        assert_eq!(parse_size("512kb"), Ok(512 * 1024));
        assert_eq!(parse_size("4096"), Ok(4096));
        for bad in ["", "0", "ten", "10TB", "-1MB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rotates_by_size_between_lines_and_keeps_the_newest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("logs").join("calico-felix.log");
        let secs = secs();
        let log = Log::with_clock(path.clone(), settings(2), false, ahead(secs.clone()));
        for i in 0..5 {
            // Each write is 60 bytes, so every write after the first rotates.
            log.raw(format!("{i:059}\n").as_bytes());
            secs.fetch_add(1, Ordering::SeqCst);
        }
        let got = names(path.parent().expect("dir"));
        assert_eq!(
            got,
            [
                "calico-felix-20251121T080003Z.log",
                "calico-felix-20251121T080004Z.log",
                "calico-felix.log"
            ]
        );
        let current = fs_err::read_to_string(&path).expect("read");
        assert_eq!(current, format!("{:059}\n", 4));
        let newest_old =
            fs_err::read_to_string(path.with_file_name("calico-felix-20251121T080004Z.log"))
                .expect("read");
        assert_eq!(newest_old, format!("{:059}\n", 3), "lines are never split");
    }

    /// A clock the test moves (far ahead, a new file's creation time looks days old).
    fn ahead(secs: Arc<AtomicU64>) -> Clock {
        Arc::new(move || SystemTime::UNIX_EPOCH + Duration::from_secs(secs.load(Ordering::SeqCst)))
    }

    /// Rotates by day; a restart keeps the log's age, from its first line, not its creation
    /// time (here ten days before the clock).
    #[test]
    fn rotates_by_day_and_a_restart_keeps_the_age_of_the_first_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("calico-node.log");
        let real_now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let secs = Arc::new(AtomicU64::new(real_now + 10 * 86_400));
        let settings = LogSettings::default();
        Log::with_clock(path.clone(), settings, false, ahead(secs.clone())).info("first day");
        // The service restarts an hour later: the log is an hour old, not ten days.
        secs.fetch_add(3600, Ordering::SeqCst);
        let log = Log::with_clock(path.clone(), settings, false, ahead(secs.clone()));
        log.info("an hour later");
        assert_eq!(names(dir.path()), ["calico-node.log"], "rotated on restart");
        secs.fetch_add(86_400 - 3600 + 60, Ordering::SeqCst);
        log.info("next day");
        let got = names(dir.path());
        assert_eq!(got.len(), 2, "{got:?}");
        let old = fs_err::read_to_string(dir.path().join(&got[0])).expect("read");
        assert!(
            old.contains("first day") && old.contains("an hour later"),
            "{old}"
        );
        let current = fs_err::read_to_string(&path).expect("read");
        assert!(
            current.contains("[calicoctl-win] info: next day") && !current.contains("first day"),
            "{current}"
        );
    }

    #[test]
    fn a_rotation_that_cannot_rename_drops_no_line_and_is_tried_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("calico-felix.log");
        let secs = secs();
        let log = Log::with_clock(path.clone(), settings(2), false, ahead(secs.clone()));
        // ERROR_SHARING_VIOLATION (32), as from a reader without FILE_SHARE_DELETE.
        log.file.lock().expect("lock").rename = |_, _| Err(std::io::Error::from_raw_os_error(32));
        for i in 0..10 {
            log.info(&format!("line {i} of the felix log"));
        }
        let text = fs_err::read_to_string(&path).expect("log");
        for i in 0..10 {
            assert!(
                text.contains(&format!("line {i} of")),
                "line {i} dropped: {text}"
            );
        }
        assert!(text.contains("cannot rotate the log"), "{text}");
        assert_eq!(names(dir.path()), ["calico-felix.log"]);
        // The reader is gone; a minute later the rotation happens.
        log.file.lock().expect("lock").rename = |from, to| fs_err::rename(from, to);
        secs.fetch_add(61, Ordering::SeqCst);
        log.info("after the reader");
        assert_eq!(names(dir.path()).len(), 2, "{:?}", names(dir.path()));
    }

    /// 2025-11-21T08:00:00Z.
    fn secs() -> Arc<AtomicU64> {
        Arc::new(AtomicU64::new(1_763_712_000))
    }

    fn settings(keep: usize) -> LogSettings {
        LogSettings {
            max_size: 100,
            rotate_every: Duration::from_secs(86_400),
            keep,
        }
    }

    /// The oldest go first, by time and number (`.log`, `.2.log`, then `.10.log`); an old log
    /// that cannot be removed costs a warning, not a line, and the others still go.
    #[test]
    fn old_logs_are_removed_oldest_first_and_one_that_cannot_be_drops_no_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("calico-felix.log");
        // A directory under a rotated file's name: removing it as a file fails.
        fs_err::create_dir(dir.path().join("calico-felix-19990101T000000Z.log")).expect("dir");
        for n in ["", ".2", ".10"] {
            let name = format!("calico-felix-20000101T000000Z{n}.log");
            fs_err::write(dir.path().join(name), "old\n").expect("old");
        }
        let log = Log::with_clock(path.clone(), settings(2), false, ahead(secs()));
        log.raw(format!("{:059}\n", 0).as_bytes());
        log.raw(format!("{:059}\n", 1).as_bytes());
        let current = fs_err::read_to_string(&path).expect("read");
        assert!(current.contains("cannot remove an old log"), "{current}");
        assert!(current.ends_with(&format!("{:059}\n", 1)), "{current}");
        assert_eq!(
            names(dir.path()),
            [
                "calico-felix-19990101T000000Z.log",
                "calico-felix-20000101T000000Z.10.log",
                "calico-felix-20251121T080000Z.log",
                "calico-felix.log"
            ]
        );
    }
}
