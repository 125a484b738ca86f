//! A follower's kept position (`logs --follow --position FILE`): one fixed-width record
//! overwritten in place by one write per line (a killed process leaves it whole), with a
//! checksum that tells a torn or never-written (zeros) record; synced at most every `SYNC`.
//! The file goes through the host's `Files`, judged as `installed::protection` judges what a
//! SYSTEM process reads: someone else's file is made anew, their link is not followed.

use crate::host::{Access, Host};
use crate::installed::logs::Position;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

/// How long a written record may stay unsynced (a power loss repeats what it covers).
const SYNC: Duration = Duration::from_secs(1);
/// What a record starts with: its format.
const TAG: &str = "P2";
/// The width of the pending redaction state (`Position::pending`, compact JSON padded with
/// `_`): what the line before left to redact on the next.
const PENDING: usize = 56;
/// A record's length: the tag, the head's hash (64 hex), head_len, offset, at, in_key,
/// pending and the checksum (16 hex), separated by spaces, and a newline.
pub const RECORD: usize = 2 + 1 + 64 + 1 + 20 + 1 + 20 + 1 + 20 + 1 + 1 + 1 + PENDING + 1 + 16 + 1;

/// The record of `p`; `None` when its head is not a hash or its pending state does not fit
/// (it cannot be kept at fixed width).
pub fn record(p: &Position) -> Option<Vec<u8>> {
    let pending = serde_json::to_string(&p.pending).ok()?;
    if pending.len() > PENDING || pending.contains([' ', '_']) {
        return None;
    }
    let body = format!(
        "{TAG} {} {:020} {:020} {:+020} {} {pending:_<PENDING$}",
        p.head,
        p.head_len,
        p.offset,
        p.at,
        u8::from(p.in_key)
    );
    let sum = &crate::files::sha256_hex(body.as_bytes())[..16];
    let text = format!("{body} {sum}\n");
    (text.len() == RECORD).then(|| text.into_bytes())
}

/// The position in a file's bytes: its first `RECORD` bytes.
pub fn parse(bytes: &[u8]) -> anyhow::Result<Position> {
    let torn = || anyhow::anyhow!("it holds no whole position record (torn, or never written)");
    let rec = bytes.get(..RECORD).ok_or_else(torn)?;
    let text = std::str::from_utf8(rec).map_err(|_| torn())?;
    let (body, sum) = text
        .trim_end_matches('\n')
        .rsplit_once(' ')
        .ok_or_else(torn)?;
    if !text.ends_with('\n') || crate::files::sha256_hex(body.as_bytes())[..16] != *sum {
        return Err(torn());
    }
    let f: Vec<&str> = body.split(' ').collect();
    let [TAG, head, head_len, offset, at, in_key, pending] = f[..] else {
        return Err(torn());
    };
    Ok(Position {
        head: head.to_owned(),
        head_len: head_len.parse()?,
        offset: offset.parse()?,
        at: at.parse()?,
        in_key: in_key == "1",
        pending: serde_json::from_str(pending.trim_end_matches('_'))?,
    })
}

/// Who but SYSTEM, Administrators and `admin` may change the position file: their record
/// would choose where the follower starts, and what the redactor holds pending.
pub use crate::installed::protection::file_writers as writers;

/// Why the position file at `path` is neither read nor written: a link on its way that others
/// made or may change would point where this process (SYSTEM) writes (`untrusted_link`).
pub fn refused(h: &dyn Host, path: &str, admin: Option<&str>) -> Option<String> {
    refused_for(h, path, admin, sandbox().as_deref())
}

/// `refused`, with `sandbox` the HostProcess container's (a link there judged by its owner).
pub fn refused_for(
    h: &dyn Host,
    path: &str,
    admin: Option<&str>,
    sandbox: Option<&str>,
) -> Option<String> {
    let (link, who) = crate::installed::protection::untrusted_link(h, path, admin, sandbox)?;
    Some(format!(
        "{link} is a junction or symbolic link that someone but SYSTEM and Administrators owns or may change ({who}): what is written through it goes wherever it is pointed, so {path} is neither read nor written (give --position a path without links, or one whose links only SYSTEM and Administrators own and may change)"
    ))
}

/// The sandbox of the HostProcess container this process runs in: hcsshim sets
/// `CONTAINER_SANDBOX_MOUNT_POINT` in every HostProcess container's environment (Kubernetes,
/// "Create a Windows HostProcess Pod", Volume mounts); none elsewhere.
fn sandbox() -> Option<String> {
    std::env::var("CONTAINER_SANDBOX_MOUNT_POINT")
        .ok()
        .filter(|s| !s.is_empty())
}

/// The position file, held open while the follower runs.
pub struct Kept<'h> {
    host: &'h dyn Host,
    path: String,
    /// This elevated process's account (`writers`).
    admin: Option<String>,
    file: Option<File>,
    /// Whether the file was cut to one record (a longer file may have been there).
    sized: bool,
    /// A record written and not yet synced.
    dirty: bool,
    synced: Instant,
    /// The first failure to keep the position, until it is said (`unsaid`), and whether it was.
    failed: Option<String>,
    said: bool,
}

impl<'h> Kept<'h> {
    pub fn new(host: &'h dyn Host, path: &str, admin: Option<String>) -> Self {
        Self {
            host,
            path: path.to_owned(),
            admin,
            file: None,
            sized: false,
            dirty: false,
            synced: Instant::now(),
            failed: None,
            said: false,
        }
    }

    /// Keeps `p`: a failure costs repeats after a restart, not lines; the first is kept to say.
    pub fn keep(&mut self, p: &Position) {
        let saved = self.save(p);
        self.note(saved);
    }

    /// Syncs (`sync`), a failure kept to say as `keep`'s.
    pub fn flush(&mut self) {
        let synced = self.sync();
        self.note(synced);
    }

    fn note(&mut self, r: anyhow::Result<()>) {
        if let (Err(e), None) = (r, &self.failed) {
            self.failed = Some(format!("cannot keep the position: {e:#}"));
        }
    }

    /// The first failure, once.
    pub fn unsaid(&mut self) -> Option<String> {
        if self.said {
            return None;
        }
        self.said = self.failed.is_some();
        self.failed.clone()
    }

    /// Overwrites the record with `p`: one write; a sync when the last is `SYNC` old.
    pub fn save(&mut self, p: &Position) -> anyhow::Result<()> {
        let rec = record(p).ok_or_else(|| anyhow::anyhow!("a position whose head is no hash"))?;
        let written = self.write(&rec);
        if written.is_err() {
            // Opened again at the next line (a directory made since, a file no longer held).
            self.file = None;
        }
        written?;
        self.dirty = true;
        if self.synced.elapsed() >= SYNC {
            self.sync()?;
        }
        Ok(())
    }

    fn write(&mut self, rec: &[u8]) -> anyhow::Result<()> {
        let path = self.path.as_str();
        let with = |e: std::io::Error| anyhow::anyhow!("cannot write {path}: {e}");
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let (opened, fresh) = open(self.host, path, self.admin.as_deref())?;
                self.sized |= fresh;
                self.file.insert(opened)
            }
        };
        file.seek(SeekFrom::Start(0)).map_err(with)?;
        file.write_all(rec).map_err(with)?;
        if !self.sized {
            // After the record is written: a kill between them leaves it, then the old tail.
            file.set_len(RECORD as u64).map_err(with)?;
            self.sized = true;
        }
        Ok(())
    }

    /// Syncs what was written since the last sync.
    pub fn sync(&mut self) -> anyhow::Result<()> {
        if let (true, Some(f)) = (self.dirty, &self.file) {
            f.sync_data()
                .map_err(|e| anyhow::anyhow!("cannot sync {}: {e}", self.path))?;
        }
        self.dirty = false;
        self.synced = Instant::now();
        Ok(())
    }
}

/// The position file opened to be overwritten in place, and whether it was made anew:
/// refused through a link others may change (judged at each opening) or in a missing
/// directory; made anew (`Access::Secret`) when missing or others may change it; bound to
/// the handle (`bound`): where the path led when judged is where the handle opened.
fn open(h: &dyn Host, path: &str, admin: Option<&str>) -> anyhow::Result<(File, bool)> {
    if let Some(why) = refused(h, path, admin) {
        anyhow::bail!("{why}");
    }
    let dir = path.rsplit_once(['\\', '/']).map_or(path, |(d, _)| d);
    let no_dir = || anyhow::anyhow!("cannot write {path}: {dir} is no directory");
    if !h.dir_exists(dir)? {
        return Err(no_dir());
    }
    // A link at the last name is refused before anything is made or read through it: the
    // handle would open the link itself (`Files::open_update`), whose final path is its own.
    if h.is_reparse_point(path)? {
        return Err(not_plain(path, path));
    }
    // Where the path leads as it was judged (its directory's, with its name, when not there),
    // as the file system names it: a short (8.3) name, a trailing dot, a drive's root.
    let judged = h.final_path(path)?.ok_or_else(no_dir)?;
    let protect = |e| anyhow::anyhow!("cannot protect {path}: {e}");
    let fresh = if h.file_access(path)?.is_none() {
        h.write_file(path, b"", Access::Secret).map_err(protect)?;
        true
    } else if !writers(h, path, admin).is_empty() {
        h.replace_file(path, b"", Access::Secret).map_err(protect)?;
        true
    } else {
        false
    };
    let opened = h
        .open_update(path)?
        .ok_or_else(|| anyhow::anyhow!("cannot write {path}: it is gone"))?;
    Ok((bound(path, &judged, opened)?, fresh))
}

/// The file `opened` when it is what was judged: its handle's final path is `judged`, and it
/// is a plain file with one name. Else it is closed unwritten: a link on the way changed since
/// (or a directory replaced), or the name is a link or a hard link, so SYSTEM's write would go
/// to another file.
fn bound(path: &str, judged: &str, opened: crate::host::OpenedFile) -> anyhow::Result<File> {
    let at = opened.final_path.as_str();
    if !crate::host::same_final_path(at, judged) {
        anyhow::bail!(
            "{path} led to {judged} when it was judged, but what was opened is {at}: a junction or link on its way changed since, so nothing is written there (give --position a path whose directories only SYSTEM and Administrators may change)"
        );
    }
    if !opened.sole_plain {
        return Err(not_plain(path, at));
    }
    Ok(opened.file)
}

/// Why the position file `path`, at `at`, is not written: no plain file with one name.
fn not_plain(path: &str, at: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{path} ({at}) is not a plain file with one name: a junction or link itself, or a second name (hard link) of another file, which what is written there would change; nothing is written (remove it: del \"{path}\")"
    )
}

impl Drop for Kept<'_> {
    fn drop(&mut self) {
        // The end of the follower (a stop, an output closed): nothing left to say it to.
        let _ = self.sync();
    }
}

#[cfg(test)]
#[path = "logs_position_tests.rs"]
mod tests;
