//! A follower's kept position (`logs --follow --position FILE`): one fixed-width record
//! overwritten in place by one write per line (a killed process leaves the last record whole),
//! with a checksum that tells a record a power loss tore or never wrote (zeros) from one that
//! holds; synced at most every `SYNC` and at the end. The JSON document older followers kept is
//! read too.

use crate::installed::logs::Position;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a written record may stay unsynced (a power loss repeats what it covers).
const SYNC: Duration = Duration::from_secs(1);
/// What a record starts with: its format.
const TAG: &str = "P1";
/// A record's length: the tag, the head's hash (64 hex), head_len, offset, at, in_key and
/// the checksum (16 hex), separated by spaces, and a newline.
pub const RECORD: usize = 2 + 1 + 64 + 1 + 20 + 1 + 20 + 1 + 20 + 1 + 1 + 1 + 16 + 1;

/// The record of `p`; `None` when its head is not a hash (it cannot be kept at fixed width).
pub fn record(p: &Position) -> Option<Vec<u8>> {
    let body = format!(
        "{TAG} {} {:020} {:020} {:+020} {}",
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

/// The position in a file's bytes: a record (its first `RECORD` bytes), or the older JSON.
pub fn parse(bytes: &[u8]) -> anyhow::Result<Position> {
    if bytes.first() == Some(&b'{') {
        return Ok(serde_json::from_slice(bytes)?);
    }
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
    let [TAG, head, head_len, offset, at, in_key] = f[..] else {
        return Err(torn());
    };
    Ok(Position {
        head: head.to_owned(),
        head_len: head_len.parse()?,
        offset: offset.parse()?,
        at: at.parse()?,
        in_key: in_key == "1",
    })
}

/// The position file, held open while the follower runs.
pub struct Kept {
    path: PathBuf,
    file: Option<File>,
    /// Whether the file was cut to one record (an older, longer document may follow it).
    sized: bool,
    /// A record written and not yet synced.
    dirty: bool,
    synced: Instant,
}

impl Kept {
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            file: None,
            sized: false,
            dirty: false,
            synced: Instant::now(),
        }
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
        let path = &self.path;
        let with = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)
                    .map_err(with)?,
            ),
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
                .map_err(|e| anyhow::anyhow!("cannot sync {}: {e}", self.path.display()))?;
        }
        self.dirty = false;
        self.synced = Instant::now();
        Ok(())
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        // The end of the follower (a stop, an output closed): nothing left to say it to.
        let _ = self.sync();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position() -> Position {
        Position {
            head: crate::files::sha256_hex(b"felix 0\n"),
            head_len: 8,
            offset: 1234,
            at: -5,
            in_key: true,
        }
    }

    #[test]
    fn a_record_is_read_back_and_a_torn_or_zero_one_is_refused() {
        let rec = record(&position()).expect("a record");
        assert_eq!(rec.len(), RECORD);
        assert_eq!(parse(&rec).expect("parsed"), position());
        // An older, longer document left after it (a kill before the cut) changes nothing.
        let mut longer = rec.clone();
        longer.extend_from_slice(b"\"offset\": 9}\n");
        assert_eq!(parse(&longer).expect("parsed"), position());
        // Zeros (a power loss before the data reached the disk), a torn or short record.
        assert!(parse(&[0u8; RECORD]).is_err());
        assert!(parse(b"").is_err());
        assert!(parse(&rec[..RECORD - 1]).is_err());
        let mut torn = rec.clone();
        torn[80..90].fill(0);
        assert!(parse(&torn).is_err());
        let mut changed = rec;
        changed[70] = b'9';
        assert!(parse(&changed).is_err());
    }

    #[test]
    fn the_older_json_document_is_read() {
        let json = serde_json::to_vec(&position()).expect("json");
        assert_eq!(parse(&json).expect("parsed"), position());
    }

    #[test]
    fn a_kept_file_is_overwritten_in_place_and_cut_to_one_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("felix.pos");
        fs_err::write(&path, vec![b'{'; 400]).expect("older");
        let mut kept = Kept::new(&path);
        let mut p = position();
        kept.save(&p).expect("saved");
        p.offset = 99_999;
        kept.save(&p).expect("saved");
        drop(kept);
        let bytes = fs_err::read(&path).expect("kept");
        assert_eq!(bytes.len(), RECORD);
        assert_eq!(parse(&bytes).expect("parsed"), p);
    }
}
