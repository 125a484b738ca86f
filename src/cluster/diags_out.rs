//! `fleet diags`' output directory: made, or taken when it is empty or holds only what a run
//! of `fleet diags` left there: the zips its `index.json` lists, that index, and partial
//! `.NAME.part` files (a run cut short by Ctrl-C or killed leaves them). Anything else (a zip
//! the index does not list, an `index.txt` without `index.json`, a file of another name)
//! refuses the run, naming the first such entry by name, before anything is changed.
//!
//! A run holds the operating system's exclusive lock on `.fleet-diags.lock` (`File::try_lock`:
//! `LockFileEx` on Windows, `flock` elsewhere) while it writes, so two runs never share a
//! directory; the lock dies with its process, so a run stopped by Ctrl-C or killed leaves none
//! held. The file stays (as `host::lock`'s does: a run that removed it while another opened it
//! could let two hold a lock each). A run removes only the partial files before gathering; an
//! earlier run's zips and index stay until this run's gathering finished (a node's new zip
//! renames over its old one), so a rerun that fails changes nothing but the partial files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The index's files (`diags_gather::write_index`).
const INDEX: [&str; 2] = ["index.json", "index.txt"];
/// The most an earlier run's `index.json` may hold (a line is under 1 KiB: 16,000 nodes).
const INDEX_CAP: u64 = 16 << 20;
/// The file whose lock a run holds on its output directory while it writes there.
pub const LOCK: &str = ".fleet-diags.lock";

/// An output directory a run does not take: nothing in it was changed.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    #[error(
        "the output directory {0} holds {1}, which is not fleet diags' (it writes the NODE.zip files its index.json lists, index.json, index.txt and partial .NAME.part files)"
    )]
    NotOurs(PathBuf, String),
    #[error("{0} is not an index fleet diags writes")]
    BadIndex(PathBuf, #[source] serde_json::Error),
    #[error("another run of fleet diags writes into {0} now (it holds the lock on {1})")]
    Locked(PathBuf, String),
    #[error("cannot use the output directory {0}")]
    Io(PathBuf, #[source] std::io::Error),
}

impl OutError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Self::Locked(..) => "wait for it to end, or give --out another directory".into(),
            _ => "give --out a directory that does not exist yet, an empty one, or one a run of 'fleet diags' wrote (its zips and index, or a cut-short first run's partial files); a zip a run stopped before writing its index left is listed nowhere: remove it, or give another directory".into(),
        }
    }
}

/// What a name in the output directory is of a run's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Left {
    /// A node's bundle while it came (`.NODE.zip.part`), or the index's while written.
    Partial,
    /// A node's whole bundle, `NODE.zip`.
    Zip,
    /// `index.json`, `index.txt`.
    Index,
    /// `.fleet-diags.lock`.
    Lock,
}

/// What a run of `fleet diags` writes under `name`, if it writes it.
fn left_by_a_run(name: &str) -> Option<Left> {
    let node_zip = |n: &str| {
        n.strip_suffix(".zip")
            .is_some_and(super::diags_fetch::is_file_name)
    };
    if name == LOCK {
        return Some(Left::Lock);
    }
    if let Some(part) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".part")) {
        return (node_zip(part) || INDEX.contains(&part)).then_some(Left::Partial);
    }
    match (node_zip(name), INDEX.contains(&name)) {
        (true, _) => Some(Left::Zip),
        (false, true) => Some(Left::Index),
        (false, false) => None,
    }
}

/// The part of an earlier run's `index.json` a rerun reads: its lines' zips, and the zips it
/// kept from a run before it (`earlier_zips`). The counts are required, so that only our index parses.
#[derive(serde::Deserialize)]
struct EarlierIndex {
    nodes: Vec<EarlierLine>,
    #[serde(rename = "gathered")]
    _gathered: usize,
    #[serde(rename = "failed")]
    _failed: usize,
    #[serde(rename = "run_timed_out")]
    _run_timed_out: bool,
    #[serde(default)]
    earlier_zips: Vec<String>,
}

#[derive(serde::Deserialize)]
struct EarlierLine {
    #[serde(rename = "node")]
    _node: String,
    #[serde(default)]
    file: Option<String>,
}

/// The zips `out/index.json` lists, each a bare zip name (never a path elsewhere).
fn listed_zips(out: &Path) -> Result<BTreeSet<String>, OutError> {
    use std::io::Read;
    let path = out.join("index.json");
    let io = |e| OutError::Io(out.to_owned(), e);
    let mut text = Vec::new();
    fs_err::File::open(&path)
        .map_err(io)?
        .take(INDEX_CAP + 1)
        .read_to_end(&mut text)
        .map_err(io)?;
    if text.len() as u64 > INDEX_CAP {
        let too_long = std::io::Error::other(format!(
            "{} is longer than {INDEX_CAP} bytes",
            path.display()
        ));
        return Err(io(too_long));
    }
    let index: EarlierIndex =
        serde_json::from_slice(&text).map_err(|e| OutError::BadIndex(path, e))?;
    let files = index.nodes.into_iter().filter_map(|l| l.file);
    Ok(files
        .chain(index.earlier_zips)
        .filter(|f| left_by_a_run(f) == Some(Left::Zip))
        .collect())
}

/// An output directory a run took: its lock held until dropped, and the zips the earlier
/// run's index listed, which `diags_gather::finish` names as kept when this run did not
/// replace them.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    earlier: BTreeSet<String>,
    /// Held locked until dropped, when closing it releases the lock.
    _lock: std::fs::File,
}

impl OutDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The zips the earlier run's index listed.
    pub fn earlier_zips(&self) -> impl Iterator<Item = &str> {
        self.earlier.iter().map(String::as_str)
    }
}

/// Makes `out`, or takes it when it is empty or holds only a run's own files; holds its lock
/// and removes the partial files (positively dead: no other run writes while the lock is held).
/// Refuses anything else, changing nothing.
pub fn prepare_out(out: &Path) -> Result<OutDir, OutError> {
    let io = |e| OutError::Io(out.to_owned(), e);
    fs_err::create_dir_all(out).map_err(io)?;
    // Judged before the lock file is made, so that a refusal changes nothing; judged again
    // under the lock, which another run may have held meanwhile. A run going on writes zips
    // its index does not list yet: refused for them, the refusal says that run holds the lock.
    let path = out.join(LOCK);
    if let Err(refused) = classify(out) {
        return Err(match held_elsewhere(&path) {
            true => OutError::Locked(out.to_owned(), LOCK.into()),
            false => refused,
        });
    }
    // Opened only as a plain file: a link of its name would lock (and make) another file.
    match fs_err::symlink_metadata(&path) {
        Ok(m) if !m.is_file() => return Err(OutError::NotOurs(out.to_owned(), LOCK.into())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let lock = fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?
        .into_parts()
        .0;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(OutError::Locked(out.to_owned(), LOCK.into()));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
    }
    let (earlier, partial) = classify(out)?;
    for name in partial {
        fs_err::remove_file(out.join(name)).map_err(io)?;
    }
    Ok(OutDir {
        dir: out.to_owned(),
        earlier,
        _lock: lock,
    })
}

/// Whether another process holds the lock file `path` (an existing plain file, opened
/// without making it: asking changes nothing).
fn held_elsewhere(path: &Path) -> bool {
    let plain = fs_err::symlink_metadata(path).is_ok_and(|m| m.is_file());
    let open = || std::fs::OpenOptions::new().read(true).open(path).ok();
    plain && open().is_some_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// The zips the directory's index lists and its partial files, when everything in it is a
/// run's; else the first entry by name that is not (the same at every try).
fn classify(out: &Path) -> Result<(BTreeSet<String>, Vec<String>), OutError> {
    let io = |e| OutError::Io(out.to_owned(), e);
    let mut found = Vec::new();
    for entry in fs_err::read_dir(out).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // A run writes plain files only: a directory or a link of one of its names is not one.
        found.push((name, entry.file_type().map_err(io)?.is_file()));
    }
    found.sort();
    let has_index = found.iter().any(|(n, file)| *file && n == "index.json");
    let listed = if has_index {
        listed_zips(out)?
    } else {
        BTreeSet::new()
    };
    let mut partial = Vec::new();
    for (name, file) in found {
        let ours = match left_by_a_run(&name).filter(|_| file) {
            Some(Left::Partial) => {
                partial.push(name.clone());
                true
            }
            Some(Left::Zip) => listed.contains(&name),
            Some(Left::Index) => has_index,
            Some(Left::Lock) => true,
            None => false,
        };
        if !ours {
            return Err(OutError::NotOurs(out.to_owned(), name));
        }
    }
    Ok((listed, partial))
}

#[cfg(test)]
#[path = "diags_out_tests.rs"]
mod tests;
