//! Extraction that follows a download: while the zip is still arriving, its entries are read
//! from their local headers and written into the staging directory, so downloading, hashing
//! and inflating overlap, and several entries inflate at once (one thread reads the headers,
//! workers inflate the entries they find, each reading the file at its own offset). What this writes is provisional: nothing leaves staging before the
//! download's checksum matched and the finished archive's central directory, checked as
//! [`super::extract`] checks it, lists exactly the files that were streamed (name, size and
//! CRC). Anything else (an entry whose sizes follow its data, an entry the central directory
//! does not list, a name refused on the way) gives up the streamed copy and the finished zip is
//! extracted again from the start, the same way a zip file given on the command line is.

use super::ReleaseError;
use super::extract::{Listing as Streamed, components, windows_key};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
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
    fn at(file: &Arc<File>, pos: u64, growth: &'a Growth) -> BufReader<Self> {
        let file = Arc::clone(file);
        BufReader::with_capacity(1 << 16, Self { file, pos, growth })
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

/// Counts the bytes read through it: where the next local header begins.
struct Counted<R> {
    inner: R,
    at: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at += n as u64;
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
    target: PathBuf,
    /// Where its local header begins.
    at: u64,
}

/// Extracts the zip `growth`'s writer writes into `into` while it is written; returns the files
/// written, to be confirmed against the finished archive by [`confirm`].
pub fn follow(growth: &Growth, into: &Path, cap: u64) -> Result<Streamed, GaveUp> {
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
                        done.push(inflate(&file, growth, &job, &written, cap));
                    }
                })
            })
            .collect();
        let found = read_headers(&file, growth, into, &send);
        drop(send);
        let mut streamed = Streamed::new();
        let mut failed = found.err();
        for worker in inflating {
            for r in worker
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
            {
                match r {
                    Ok((name, listed)) => {
                        streamed.insert(name, listed);
                    }
                    Err(e) => failed = failed.or(Some(e)),
                }
            }
        }
        failed.map_or(Ok(streamed), Err)
    })
}

/// Reads the local headers one after the other, skipping each entry's data, and hands the
/// files to the workers.
fn read_headers(
    file: &Arc<File>,
    growth: &Growth,
    into: &Path,
    send: &std::sync::mpsc::Sender<Job>,
) -> Result<(), GaveUp> {
    let gave_up = |why: String| GaveUp(why);
    let mut reader = Counted {
        inner: Follow::at(file, 0, growth),
        at: 0,
    };
    let mut names = std::collections::BTreeSet::new();
    loop {
        let at = reader.at;
        let entry = match zip::read::read_zipfile_from_stream(&mut reader) {
            Ok(Some(e)) => e,
            // The central directory begins: every file was read.
            Ok(None) => return Ok(()),
            Err(e) => return Err(gave_up(format!("{e}"))),
        };
        let name = entry
            .name()
            .map_err(|e| gave_up(format!("{e}")))?
            .into_owned();
        let parts = components(&name).map_err(|why| gave_up(format!("{name:?} {why}")))?;
        windows_key(&parts).map_err(|why| gave_up(format!("{name:?} {why}")))?;
        let target = parts.iter().fold(into.to_path_buf(), |p, c| p.join(c));
        if entry.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| gave_up(format!("{name}: {e}")))?;
            continue;
        }
        if !names.insert(name.clone()) {
            return Err(gave_up(format!("{name:?} appears twice")));
        }
        // Dropping the entry skips its data without inflating it.
        drop(entry);
        send.send(Job { name, target, at })
            .map_err(|_| gave_up("the workers stopped".into()))?;
    }
}

/// Inflates one entry into its file: its name, size and CRC-32 (checked as it is read).
fn inflate(
    file: &Arc<File>,
    growth: &Growth,
    job: &Job,
    written: &AtomicU64,
    cap: u64,
) -> Result<(String, (u64, u32)), GaveUp> {
    let io = |e: std::io::Error| GaveUp(format!("{}: {e}", job.name));
    let mut reader = Follow::at(file, job.at, growth);
    let mut entry = match zip::read::read_zipfile_from_stream(&mut reader) {
        Ok(Some(e)) => e,
        Ok(None) => return Err(GaveUp(format!("{}: no entry at {}", job.name, job.at))),
        Err(e) => return Err(GaveUp(format!("{}: {e}", job.name))),
    };
    if let Some(parent) = job.target.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut out = File::create(&job.target).map_err(io)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        // Reading to the end checks the entry's CRC-32.
        let n = entry.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        if written.fetch_add(n as u64, Ordering::Relaxed) + n as u64 > cap {
            return Err(GaveUp("larger than the cap".into()));
        }
        out.write_all(&buf[..n]).map_err(io)?;
    }
    Ok((job.name.clone(), (size, entry.crc32())))
}

/// Whether the finished zip, checked whole, holds exactly the files that were streamed.
pub fn confirm(zip: &Path, streamed: &Streamed, cap: u64) -> Result<(), GaveUp> {
    let listed = super::extract::check(zip, cap).map_err(|e| GaveUp(e.to_string()))?;
    if listed != *streamed {
        return Err(GaveUp(
            "the central directory does not list the files the stream held".into(),
        ));
    }
    Ok(())
}

/// Empties `dir` for a fresh extraction.
pub fn clear(dir: &Path) -> Result<(), ReleaseError> {
    let io = |e| ReleaseError::io(format!("cannot empty {}", dir.display()), e);
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        if entry.file_type().map_err(io)?.is_dir() {
            std::fs::remove_dir_all(&path).map_err(io)?;
        } else {
            std::fs::remove_file(&path).map_err(io)?;
        }
    }
    Ok(())
}

/// Extracts a whole zip on this machine the same way: its central directory checked before
/// anything is written, then its entries inflated at once and confirmed; the one-by-one
/// extraction from the start when the stream gives up.
pub fn extract_whole(zip: &Path, into: &Path, cap: u64) -> Result<super::Extracted, ReleaseError> {
    let listed = super::extract::check(zip, cap)?;
    let file = File::open(zip)
        .map_err(|e| ReleaseError::io(format!("cannot read {}", zip.display()), e))?;
    let len = file
        .metadata()
        .map_err(|e| ReleaseError::io(format!("cannot read {}", zip.display()), e))?
        .len();
    let growth = Growth::default();
    growth.start(file, len);
    growth.complete(len);
    match follow(&growth, into, cap) {
        Ok(streamed) if streamed == listed => super::extract::layout(into, zip),
        _ => {
            clear(into)?;
            super::extract(zip, into, cap)
        }
    }
}
