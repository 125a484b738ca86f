//! Extraction that follows a download: while the zip is still arriving, each entry is read
//! from its local header and inflated by a worker as its data arrives. What this writes is
//! provisional: it counts only once the checksum matched and the finished archive's central
//! directory (checked as [`super::extract`] checks it) lists exactly the files streamed; else
//! the finished zip is extracted again from the start.

use super::disk::Place;
use super::error::ReleaseError;
use super::extract::{
    Listing, Stop, Versions, components, copy_entry, is_calico_binary, target_of, windows_key,
};
use super::version::{CalicoVersion, VersionScan};
use std::fs::File;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How far a file being written has got, shared with a reader that follows it.
#[derive(Debug, Default)]
pub struct Growth {
    state: Mutex<Stage>,
    changed: Condvar,
    /// The file opened for reading by the writer as it begins: the follower reads it even
    /// after the writer renamed it.
    file: Mutex<Option<Arc<File>>>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Stage {
    /// The file is not there yet (the request is under way).
    #[default]
    Waiting,
    /// This many bytes are written and more may come.
    Growing(u64),
    /// All of it: this many bytes.
    Complete(u64),
    /// The writer gave up: what is there will never be whole.
    Failed,
}

impl Growth {
    fn set(&self, to: impl FnOnce(Stage) -> Stage) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // A finished file does not change any more.
        if !matches!(*s, Stage::Complete(_) | Stage::Failed) {
            *s = to(*s);
        }
        self.changed.notify_all();
    }

    /// The writer begins with `file` open for reading, holding `len` bytes.
    pub fn start(&self, file: File, len: u64) {
        *self.file.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(file));
        self.grew(len);
    }

    /// The file holds `len` bytes and grows.
    pub fn grew(&self, len: u64) {
        self.set(|_| Stage::Growing(len));
    }

    /// The file is whole at `len` bytes.
    pub fn complete(&self, len: u64) {
        self.set(|_| Stage::Complete(len));
    }

    /// The file will not be finished (a failed or refused download).
    pub fn failed(&self) {
        self.set(|_| Stage::Failed);
    }

    /// Waits until the file is there: the writer's handle for reading it (`None`: it never
    /// will be).
    fn started(&self) -> Option<Arc<File>> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while *s == Stage::Waiting {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        drop(s);
        self.file.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits until more than `pos` bytes are written: how many, and whether that is all.
    /// Every wait ends: the writer always ends in `complete` or `failed` (`FailOnDrop`).
    fn beyond(&self, pos: u64) -> std::io::Result<(u64, bool)> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match *s {
                Stage::Failed => {
                    return Err(std::io::Error::other("the download stopped"));
                }
                Stage::Complete(len) => return Ok((len, true)),
                Stage::Growing(len) if len > pos => return Ok((len, false)),
                _ => s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }
}

/// Marks the growth failed when the writer returns without completing it.
pub struct FailOnDrop<'a>(pub Option<&'a Growth>);

impl Drop for FailOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.0 {
            g.failed();
        }
    }
}

/// Reads `len` bytes at `offset` without moving a shared file position: readers at several
/// offsets share one handle.
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Reads a file from an offset as it is written, up to what `Growth` says is there.
struct Follow<'a> {
    file: Arc<File>,
    pos: u64,
    growth: &'a Growth,
}

impl<'a> Follow<'a> {
    fn at(file: &Arc<File>, pos: u64, growth: &'a Growth, buffer: usize) -> BufReader<Self> {
        let file = Arc::clone(file);
        BufReader::with_capacity(buffer, Self { file, pos, growth })
    }
}

impl Read for Follow<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (len, whole) = self.growth.beyond(self.pos)?;
        if self.pos >= len && whole {
            return Ok(0);
        }
        let want = usize::try_from(len - self.pos)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = read_at(&self.file, &mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file is shorter than its writer said",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Why streaming gave up: never shown as the outcome, only logged; the finished zip is then
/// extracted from the start and that extraction's verdict is the one given.
#[derive(Debug)]
pub struct GaveUp(pub String);

/// An entry found by the header reader, for a worker to inflate.
struct Job {
    name: String,
    target: String,
    /// Where its local header begins.
    at: u64,
    /// The release's Calico binary: its version is read as it is inflated.
    scan: bool,
}

/// What a follower wrote: the files (name, size and CRC-32) and the versions it read.
#[derive(Debug, Default)]
pub struct Followed {
    pub files: Listing,
    pub versions: Versions,
}

/// Extracts the zip `growth`'s writer writes into `into` while it is written; returns the files
/// written, to be confirmed against the finished archive by [`confirm`].
pub fn follow(growth: &Growth, into: Place<'_>, cap: u64) -> Result<Followed, GaveUp> {
    let Some(file) = growth.started() else {
        return Err(GaveUp("the download did not start".into()));
    };
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
    let written = AtomicU64::new(0);
    let (send, receive) = std::sync::mpsc::channel::<Job>();
    let receive = Mutex::new(receive);
    std::thread::scope(|s| {
        let inflating: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let job = receive.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(job) = job else {
                            return done;
                        };
                        done.push(inflate(&file, growth, &job, into, &written, cap));
                    }
                })
            })
            .collect();
        let found = read_headers(&file, growth, into, &send);
        drop(send);
        let mut followed = Followed::default();
        let mut failed = found.err();
        for worker in inflating {
            for r in worker
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
            {
                match r {
                    Ok(i) => {
                        followed.files.insert(i.name, i.listed);
                        if let Some(v) = i.version {
                            followed.versions.insert(i.target, v);
                        }
                    }
                    Err(e) => failed = failed.or(Some(e)),
                }
            }
        }
        failed.map_or(Ok(followed), Err)
    })
}

/// What the header reader takes from a local header.
struct Local {
    name: String,
    /// Where the next local header (or the central directory) begins.
    next: u64,
}

const LOCAL_HEADER: u32 = 0x0403_4b50;
const CENTRAL_HEADER: u32 = 0x0201_4b50;
const END_OF_CENTRAL: u32 = 0x0605_4b50;

/// Reads the local header at `at` (APPNOTE.TXT 4.3.7) without the entry's data; `None` where
/// the central directory begins.
fn local_header(file: &Arc<File>, growth: &Growth, at: u64) -> Result<Option<Local>, GaveUp> {
    let short = |e: std::io::Error| GaveUp(format!("the local header at {at}: {e}"));
    let mut reader = Follow::at(file, at, growth, 1 << 12);
    let mut fixed = [0u8; 30];
    reader.read_exact(&mut fixed[..4]).map_err(short)?;
    match u32::from_le_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]) {
        LOCAL_HEADER => {}
        CENTRAL_HEADER | END_OF_CENTRAL => return Ok(None),
        _ => return Err(GaveUp(format!("no local header at {at}"))),
    }
    reader.read_exact(&mut fixed[4..]).map_err(short)?;
    let u16_at = |i: usize| u16::from_le_bytes([fixed[i], fixed[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]);
    let flags = u16_at(6);
    if flags & 0x8 != 0 {
        return Err(GaveUp(format!(
            "the entry at {at} gives its sizes after its data"
        )));
    }
    let mut name = vec![0u8; usize::from(u16_at(26))];
    reader.read_exact(&mut name).map_err(short)?;
    let mut extra = vec![0u8; usize::from(u16_at(28))];
    reader.read_exact(&mut extra).map_err(short)?;
    // 0xFFFFFFFF: the size is in a zip64 field (APPNOTE.TXT 4.5.3), which Info-ZIP's `zip -r`
    // (calico node/Makefile, `build-windows-archive`) writes only for an entry of 4 GiB or
    // more: the finished zip is extracted whole.
    let compressed = match u32_at(18) {
        u32::MAX => return Err(GaveUp(format!("the entry at {at} gives its size in zip64"))),
        n => u64::from(n),
    };
    // Names not flagged UTF-8 (bit 11) are code page 437, which is ASCII below 128.
    if flags & 0x800 == 0 && !name.is_ascii() {
        return Err(GaveUp(format!(
            "the entry at {at} has a name in code page 437"
        )));
    }
    let name = String::from_utf8(name)
        .map_err(|_| GaveUp(format!("the entry at {at} has a name that is not UTF-8")))?;
    // A lying size points past the end (the wait for it ends with the download) or overflows.
    let next = (at + 30 + (name.len() + extra.len()) as u64)
        .checked_add(compressed)
        .ok_or_else(|| GaveUp(format!("the entry at {at} claims {compressed} bytes")))?;
    Ok(Some(Local { name, next }))
}

/// Reads the local headers one after the other, jumping over each entry's data, and hands each
/// file to the workers as soon as its header arrived.
fn read_headers(
    file: &Arc<File>,
    growth: &Growth,
    into: Place<'_>,
    send: &std::sync::mpsc::Sender<Job>,
) -> Result<(), GaveUp> {
    let mut names = std::collections::BTreeSet::new();
    let mut at = 0;
    while let Some(Local { name, next }) = local_header(file, growth, at)? {
        let parts = components(&name).map_err(|why| GaveUp(format!("{name:?} {why}")))?;
        windows_key(&parts).map_err(|why| GaveUp(format!("{name:?} {why}")))?;
        let target = target_of(into, &parts);
        if name.ends_with(['/', '\\']) {
            into.disk
                .create_dir(&target)
                .map_err(|e| GaveUp(format!("{name}: {e}")))?;
        } else {
            if !names.insert(name.clone()) {
                return Err(GaveUp(format!("{name:?} appears twice")));
            }
            let scan = is_calico_binary(&parts);
            send.send(Job {
                name,
                target,
                at,
                scan,
            })
            .map_err(|_| GaveUp("the workers stopped".into()))?;
        }
        at = next;
    }
    Ok(())
}

/// What a worker inflated.
struct Inflated {
    name: String,
    /// Size and CRC-32.
    listed: (u64, u32),
    target: String,
    /// Read from the Calico binary as it was inflated.
    version: Option<Option<CalicoVersion>>,
}

/// Inflates one entry into its file, as its data arrives.
fn inflate(
    file: &Arc<File>,
    growth: &Growth,
    job: &Job,
    into: Place<'_>,
    written: &AtomicU64,
    cap: u64,
) -> Result<Inflated, GaveUp> {
    let io = |e: std::io::Error| GaveUp(format!("{}: {e}", job.name));
    let mut reader = Follow::at(file, job.at, growth, 1 << 16);
    let mut entry = match zip::read::read_zipfile_from_stream(&mut reader) {
        Ok(Some(e)) => e,
        Ok(None) => return Err(GaveUp(format!("{}: no entry at {}", job.name, job.at))),
        Err(e) => return Err(GaveUp(format!("{}: {e}", job.name))),
    };
    // The zip crate reads the header the header reader read: the two agree on the name.
    if entry.name().ok().as_deref() != Some(job.name.as_str()) {
        return Err(GaveUp(format!("{}: the header reads otherwise", job.name)));
    }
    let mut out = into.disk.write(&job.target, false).map_err(io)?;
    let mut scan = job.scan.then(VersionScan::default);
    let within_cap = |n: u64| written.fetch_add(n, Ordering::Relaxed) + n <= cap;
    let size = match copy_entry(&mut entry, &mut out, scan.as_mut(), within_cap) {
        Ok(size) => size,
        Err(Stop::Io(e)) => return Err(io(e)),
        Err(Stop::Cap) => return Err(GaveUp("larger than the cap".into())),
    };
    Ok(Inflated {
        name: job.name.clone(),
        listed: (size, entry.crc32()),
        target: job.target.clone(),
        version: scan.map(VersionScan::finish),
    })
}

/// Whether the finished zip, checked whole, holds exactly the files that were streamed.
pub fn confirm(zip: Place<'_>, streamed: &Followed, cap: u64) -> Result<(), GaveUp> {
    let listed = super::extract::check(zip, cap).map_err(|e| GaveUp(e.to_string()))?;
    if listed != streamed.files {
        return Err(GaveUp(
            "the central directory does not list the files the stream held".into(),
        ));
    }
    Ok(())
}

/// Empties `dir` for a fresh extraction.
pub fn clear(dir: Place<'_>) -> Result<(), ReleaseError> {
    let io = |e| ReleaseError::io(format!("cannot empty {}", dir.path), e);
    for (name, is_dir) in dir.disk.list(dir.path).map_err(io)?.unwrap_or_default() {
        let path = dir.join(&name);
        if is_dir {
            dir.disk.remove_tree(&path).map_err(io)?;
        } else {
            dir.disk.remove_file(&path).map_err(io)?;
        }
    }
    Ok(())
}

/// Extracts a whole zip on this machine the same way: its central directory checked before
/// anything is written, then its entries inflated at once and confirmed; the one-by-one
/// extraction from the start when the stream gives up.
pub fn extract_whole(
    zip: Place<'_>,
    into: Place<'_>,
    cap: u64,
) -> Result<super::extract::Extracted, ReleaseError> {
    let listed = super::extract::check(zip, cap)?;
    let read = |e| ReleaseError::io(format!("cannot read {}", zip.path), e);
    let file = zip.open().map_err(read)?;
    let len = file.metadata().map_err(read)?.len();
    let growth = Growth::default();
    growth.start(file, len);
    growth.complete(len);
    match follow(&growth, into, cap) {
        Ok(followed) if followed.files == listed => {
            super::extract::layout(into, zip.path, &followed.versions)
        }
        _ => {
            clear(into)?;
            super::extract::extract(zip, into, cap)
        }
    }
}
