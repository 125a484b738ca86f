//! A service's log read as one stream (`logs`): its rotated files (`supervise/log.rs`) in the
//! order they were written, then its current `<stem>.log`; from the last N lines, from a time,
//! or from where a follower stopped; every line redacted; memory bounded (chunks, long lines in
//! pieces). A follower holds no file open between polls (a rotation renames the file it reads)
//! and knows its file by the hash of its first bytes (`Position`): a head found nowhere is a gap,
//! said.

use crate::host::{Files, HostError, HostResult};
use crate::redact::{Pending, Redactor};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};

/// How much is read at once, and the longest line written whole.
pub const CHUNK: usize = 64 * 1024;
/// How many first bytes of a file tell it from another.
const HEAD: u64 = 1024;
/// The most rotated files read (the newest).
const MAX_FILES: usize = 1000;
/// How a rotated file's name gives its time (`supervise/log.rs`).
const STAMP: &str = "%Y%m%dT%H%M%SZ";

/// One log: the files in `dir` named `<stem>.log` and `<stem>-<UTC time>[.<n>].log`.
#[derive(Clone, Debug)]
pub struct LogSet {
    pub dir: String,
    pub stem: String,
}

impl LogSet {
    /// The files' names, oldest first, the current one last (when it exists).
    pub fn files(&self, disk: &dyn Files) -> HostResult<Vec<String>> {
        let entries = disk.list_dir(&self.dir)?.unwrap_or_default();
        let mut rotated: Vec<_> = entries
            .iter()
            .filter(|e| !e.is_dir)
            .filter_map(|e| Some((rotated_key(&e.name, &self.stem)?, e.name.clone())))
            .collect();
        rotated.sort();
        let skip = rotated.len().saturating_sub(MAX_FILES);
        let mut names: Vec<String> = rotated.into_iter().skip(skip).map(|(_, n)| n).collect();
        let current = format!("{}.log", self.stem);
        if let Some(e) = entries
            .iter()
            .find(|e| !e.is_dir && e.name.eq_ignore_ascii_case(&current))
        {
            names.push(e.name.clone());
        }
        Ok(names)
    }

    fn path(&self, name: &str) -> String {
        crate::layout::join(&self.dir, name)
    }
}

/// A rotated file's time and number (`20251121T080003Z.2` is `("20251121T080003Z", 2)`): the
/// order the files were written in, which their names alone do not sort (`.10` before `.2`);
/// `None` for a name `supervise::log` gives no rotated file.
pub(crate) fn rotated_key(name: &str, stem: &str) -> Option<(String, u32)> {
    let lower = name.to_ascii_lowercase();
    let rest = lower
        .strip_prefix(&stem.to_ascii_lowercase())?
        .strip_prefix('-')?
        .strip_suffix(".log")?;
    let (time, n) = match rest.split_once('.') {
        Some((t, n)) => (t, n.parse().ok()?),
        None => (rest, 0),
    };
    let ok = time.len() == 16 && time.bytes().all(|c| c.is_ascii_alphanumeric());
    ok.then(|| (time.to_ascii_uppercase(), n))
}

/// Whether a file in the logs directory is one of the services' logs, current or rotated
/// (`rotated_key`), for every role (kube-proxy's too).
pub fn is_service_log(name: &str) -> bool {
    crate::layout::Role::ALL.iter().any(|r| {
        let current = r.log_file();
        name.eq_ignore_ascii_case(&current)
            || rotated_key(name, current.trim_end_matches(".log")).is_some()
    })
}

/// The index of the file after `name` in `names`: the next one, or when `name` is gone
/// (pruned) the first written after it.
fn after(names: &[String], name: &str, stem: &str) -> usize {
    if let Some(i) = names.iter().position(|n| n == name) {
        return i + 1;
    }
    let Some(key) = rotated_key(name, stem) else {
        return names.len();
    };
    names
        .iter()
        .position(|n| rotated_key(n, stem).is_none_or(|k| k > key))
        .unwrap_or(names.len())
}

/// Where a piece of a line longer than a chunk ends, each piece being redacted alone: after
/// the last byte no secret holds (a space, a quote, `,{}[]`), before the words leading into a
/// value there (`redact::leads_into_value`) or a `{`/`[` that is that byte, never inside a
/// known secret's value (`Redactor::clear_of_known`); at its end when it has no such byte.
pub(crate) fn cut(piece: &[u8], redactor: &Redactor) -> usize {
    redactor.clear_of_known(piece, cut_at_free(piece))
}

fn cut_at_free(piece: &[u8]) -> usize {
    let free = |b: &u8| b.is_ascii_whitespace() || b"\"',{}[]".contains(b);
    let Some(at) = piece.iter().rposition(free) else {
        return piece.len();
    };
    // Before the words leading into a value (`token":"`, `Bearer `, `Authorization: Basic `),
    // quotes perhaps escaped (`\"password\":\"`), a `;` after them (confd's
    // `Key=/calico/bgp/v1/global/node_mesh_password; Value=X`), a `,` (a JSON `env` item's
    // `"name":"X_TOKEN",` before its `"value"`).
    let seps = |b: &u8| b.is_ascii_whitespace() || b"\"':;=\\,".contains(b);
    // Before a `{` or `[` (Go's `map[`), which tells where the values after it end
    // (`{Password:two words Other:x}`): the next piece starts with it.
    let mut end = match piece[at] {
        b'[' if piece[..at].ends_with(b"map") => at - 3,
        b'{' | b'[' => at,
        _ => at + 1,
    };
    loop {
        let word_end = piece[..end]
            .iter()
            .rposition(|b| !seps(b))
            .map_or(0, |i| i + 1);
        let word_start = piece[..word_end]
            .iter()
            .rposition(free)
            .map_or(0, |i| i + 1);
        let word = piece[word_start..word_end].to_ascii_lowercase();
        if word.is_empty() || !crate::redact::leads_into_value(&word) {
            break;
        }
        end = word_start;
    }
    if end == 0 { piece.len() } else { end }
}

/// Where a reader is: `offset` bytes into the file whose first `head_len` bytes hash to
/// `head`, as of `at` (Unix seconds). Kept by a follower that restarts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub head: String,
    pub head_len: u64,
    pub offset: u64,
    pub at: i64,
    /// Inside a private key's block there (`key_line`).
    #[serde(default)]
    pub in_key: bool,
    /// What the piece of a long line before it left pending (`Redactor::redact_piece`).
    #[serde(default)]
    pub pending: Pending,
}

/// Where reading starts when no position is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The last N lines (`u64::MAX`: all of them).
    Tail(u64),
    /// The lines from this Unix time (see `since`).
    Since(i64),
}

/// Reads one log, redacting what it writes.
pub struct Reader<'a> {
    disk: &'a dyn Files,
    set: LogSet,
    pub redactor: Redactor,
    pub position: Option<Position>,
    /// Inside a PEM private key block that began on an earlier line.
    in_key: bool,
    /// What the last line written left pending.
    pending: Pending,
    /// What a gap said, for the caller to show.
    pub gaps: Vec<String>,
    /// The bytes read from the logs so far (what bounds a tail).
    read: std::cell::Cell<u64>,
}

fn read_err(path: &str) -> impl Fn(std::io::Error) -> HostError + '_ {
    move |e| HostError::io(format!("read {path}"), e)
}

/// The hash of a file's first `len` bytes; `None` when it is shorter.
fn head_of(file: &mut File, len: u64) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.take(len).read_to_end(&mut buf)?;
    Ok((buf.len() as u64 == len).then(|| crate::files::sha256_hex(&buf)))
}

impl<'a> Reader<'a> {
    pub fn new(disk: &'a dyn Files, set: LogSet, redactor: Redactor) -> Self {
        Self {
            disk,
            set,
            redactor,
            position: None,
            in_key: false,
            pending: Pending::None,
            gaps: Vec::new(),
            read: std::cell::Cell::new(0),
        }
    }

    /// The bytes read from the logs so far.
    pub fn bytes_read(&self) -> u64 {
        self.read.get()
    }

    fn count(&self, n: usize) {
        self.read.set(self.read.get() + n as u64);
    }

    fn open(&self, name: &str) -> HostResult<Option<(File, u64)>> {
        let path = self.set.path(name);
        let Some(f) = self.disk.open_read(&path)? else {
            return Ok(None);
        };
        let size = f.metadata().map_err(read_err(&path))?.len();
        Ok(Some((f, size)))
    }

    /// Writes the log from `start` to its end, the last line too without its line break.
    pub fn read(&mut self, start: Start, out: &mut dyn Write) -> HostResult<()> {
        let names = self.set.files(self.disk)?;
        let (i, offset) = self.begin(&names, start)?;
        self.emit(&names, i, None, offset, out, true, &mut |_| {})
    }

    /// Writes what was written since the last poll (from `start` on the first), whole lines
    /// only; `save` is given the position after each line written.
    pub fn poll(
        &mut self,
        start: Start,
        out: &mut dyn Write,
        save: &mut dyn FnMut(&Position),
    ) -> HostResult<()> {
        let mut names = self.set.files(self.disk)?;
        if names.is_empty() {
            // No log yet: all of it is new when it comes (an empty head is every file's).
            if self.position.is_none() {
                self.moved(&crate::files::sha256_hex(b""), 0, 0, save);
            }
            return Ok(());
        }
        let (i, file, offset) = match self.position.clone() {
            None => {
                let (i, o) = self.begin(&names, start)?;
                (i, None, o)
            }
            Some(p) => {
                let found = self.locate(&mut names, &p)?;
                // Where it left off, inside a key's block or not; a gap starts a file.
                (self.in_key, self.pending) = match found.1 {
                    Some(_) => (p.in_key, p.pending),
                    None => (false, Pending::None),
                };
                found
            }
        };
        self.emit(&names, i, file, offset, out, false, save)
    }

    /// Finds the file a position is in, newest first; a file whose head is nowhere (removed
    /// past `keep`, or truncated in place) is a gap: reading goes on with the first file
    /// rotated after the position was taken, else the current one from its start.
    fn locate(
        &mut self,
        names: &mut Vec<String>,
        p: &Position,
    ) -> HostResult<(usize, Option<File>, u64)> {
        if p.head_len == 0 {
            // Taken before anything was written: the files rotated since are all new.
            let i = self.rotated_from(names, p.at, true);
            return Ok((i.unwrap_or(names.len().saturating_sub(1)), None, 0));
        }
        if let Some(found) = self.find(names, p)? {
            return Ok(found);
        }
        // Renamed aside between the listing and its opening: listed again, it is there.
        *names = self.set.files(self.disk)?;
        if let Some(found) = self.find(names, p)? {
            return Ok(found);
        }
        let i = self
            .rotated_from(names, p.at, false)
            .unwrap_or(names.len().saturating_sub(1));
        self.gaps.push(format!(
            "lines may be missing: the file followed in {} was removed or truncated; going on with {}",
            self.set.dir,
            names.get(i).map_or("", String::as_str)
        ));
        Ok((i, None, 0))
    }

    /// The file a position is in, newest first, opened.
    fn find(
        &self,
        names: &[String],
        p: &Position,
    ) -> HostResult<Option<(usize, Option<File>, u64)>> {
        // A head longer than any position takes (a position file edited) is no file's.
        if p.head_len > HEAD {
            return Ok(None);
        }
        for (i, name) in names.iter().enumerate().rev() {
            let Some((mut f, size)) = self.open(name)? else {
                continue;
            };
            let path = self.set.path(name);
            if head_of(&mut f, p.head_len)
                .map_err(read_err(&path))?
                .as_deref()
                == Some(&p.head)
                && size >= p.offset
            {
                return Ok(Some((i, Some(f), p.offset)));
            }
        }
        Ok(None)
    }

    /// The first of `names` rotated at `at` (Unix seconds; `at_too`) or after it, else the
    /// current file: a rotated file's name gives the time it ended.
    fn rotated_from(&self, names: &[String], at: i64, at_too: bool) -> Option<usize> {
        let from = jiff::Timestamp::from_second(at)
            .map_or_else(|_| String::new(), |t| t.strftime(STAMP).to_string());
        names.iter().position(|n| {
            rotated_key(n, &self.set.stem).is_none_or(|(t, _)| t > from || (at_too && t == from))
        })
    }

    /// The file and offset `start` begins at; sets whether that is inside a key's block.
    fn begin(&mut self, names: &[String], start: Start) -> HostResult<(usize, u64)> {
        let (i, offset) = match start {
            Start::Tail(n) => self.tail(names, n)?,
            Start::Since(t) => self.since(names, t)?,
        };
        // A line starts there: no value is pending (`Pending`).
        self.pending = Pending::None;
        self.in_key = match names.get(i) {
            Some(name) => self.key_before(name, offset)?,
            None => false,
        };
        Ok((i, offset))
    }

    /// The start of the N-th line from the end, read backwards a chunk at a time.
    fn tail(&self, names: &[String], mut need: u64) -> HostResult<(usize, u64)> {
        if need == u64::MAX {
            return Ok((0, 0));
        }
        let mut buf = vec![0u8; CHUNK];
        for (i, name) in names.iter().enumerate().rev() {
            let Some((mut f, size)) = self.open(name)? else {
                continue;
            };
            if need == 0 {
                return Ok((i, size));
            }
            let path = self.set.path(name);
            let mut end = size;
            // The file's last line break ends its last line; it starts none.
            let mut skip_last = true;
            while end > 0 {
                let from = end.saturating_sub(CHUNK as u64);
                let len = usize::try_from(end - from).unwrap_or(CHUNK);
                f.seek(SeekFrom::Start(from)).map_err(read_err(&path))?;
                f.read_exact(&mut buf[..len]).map_err(read_err(&path))?;
                self.count(len);
                for at in memchr::memrchr_iter(b'\n', &buf[..len]) {
                    let abs = from + at as u64;
                    if std::mem::take(&mut skip_last) && abs + 1 == size {
                        continue;
                    }
                    skip_last = false;
                    need -= 1;
                    if need == 0 {
                        return Ok((i, abs + 1));
                    }
                }
                skip_last = false;
                end = from;
            }
            if size > 0 {
                need -= 1;
                if need == 0 {
                    return Ok((i, 0));
                }
            }
        }
        Ok((0, 0))
    }

    /// The lines from `t`: calicoctl-win stamps its own lines in UTC (`2026-11-24T16:00:37Z
    /// [calicoctl-win] ...`); a component's line (Felix's, in local time) takes no time of
    /// its own and goes with the lines after it, so reading starts after the last stamped
    /// line before `t` in the first file that ends after `t` (a rotated file ends at the time
    /// in its name): a line written after `t` is never left out.
    fn since(&self, names: &[String], t: i64) -> HostResult<(usize, u64)> {
        let Some(i) = self.rotated_from(names, t, true) else {
            return Ok((names.len(), 0));
        };
        let Some((f, _)) = self.open(&names[i])? else {
            return Ok((i, 0));
        };
        let path = self.set.path(&names[i]);
        let mut reader = std::io::BufReader::with_capacity(CHUNK, f);
        let (mut at, mut start) = (0u64, 0u64);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = (&mut reader)
                .take(CHUNK as u64)
                .read_until(b'\n', &mut line)
                .map_err(read_err(&path))?;
            if n == 0 {
                return Ok((i, start));
            }
            at += n as u64;
            self.count(n);
            let first = line.split(|b| *b == b' ').next().unwrap_or_default();
            let time = std::str::from_utf8(first)
                .ok()
                .and_then(|s| s.parse::<jiff::Timestamp>().ok());
            if let Some(time) = time {
                if time.as_second() >= t {
                    return Ok((i, start));
                }
                start = at;
            }
        }
    }

    /// Writes `names[i..]` from `offset` in `names[i]` (`file`, when already open). The
    /// current file's last line waits for its line break unless `to_end`; a rotated file's
    /// goes out with one, as nothing will be added to it. After each rotated file the
    /// directory is listed again (`next`): the service may have rotated meanwhile.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        names: &[String],
        mut j: usize,
        mut file: Option<File>,
        mut offset: u64,
        out: &mut dyn Write,
        to_end: bool,
        save: &mut dyn FnMut(&Position),
    ) -> HostResult<()> {
        let mut names = names.to_vec();
        let mut buf = vec![0u8; CHUNK];
        while let Some(name) = names.get(j).cloned() {
            let path = self.set.path(&name);
            let opened = match file.take() {
                Some(f) => Some(f),
                None => self.open(&name)?.map(|(f, _)| f),
            };
            if let Some(mut f) = opened {
                let size = f.metadata().map_err(read_err(&path))?.len();
                let head_len = size.min(HEAD);
                let head = head_of(&mut f, head_len)
                    .map_err(read_err(&path))?
                    .unwrap_or_default();
                f.seek(SeekFrom::Start(offset)).map_err(read_err(&path))?;
                let last = j + 1 == names.len() && !to_end;
                let mut pending = 0usize;
                loop {
                    let n = f.read(&mut buf[pending..]).map_err(read_err(&path))?;
                    self.count(n);
                    let filled = pending + n;
                    let whole = match memchr::memrchr(b'\n', &buf[..filled]) {
                        Some(at) => at + 1,
                        // A line as long as the buffer goes out in pieces, a rotated file's
                        // last one at its end.
                        None if filled == buf.len() => cut(&buf[..filled], &self.redactor),
                        None if n == 0 && !last => filled,
                        None => 0,
                    };
                    // A follower killed between a line and its position shows it again.
                    for line in buf[..whole].split_inclusive(|b| *b == b'\n') {
                        self.write_lines(line, out)?;
                        offset += line.len() as u64;
                        self.moved(&head, head_len, offset, save);
                    }
                    buf.copy_within(whole..filled, 0);
                    pending = filled - whole;
                    if n == 0 {
                        break;
                    }
                }
                // A value a rotated file's last line left open ends with its file.
                if !last {
                    self.pending = Pending::None;
                }
                // Go on in this file, also when nothing was written from it yet.
                self.moved(&head, head_len, offset, save);
            }
            offset = 0;
            if j + 1 == names.len() {
                break;
            }
            let Some((again, k, f)) = self.next(&name)? else {
                break;
            };
            (names, j, file) = (again, k, Some(f));
        }
        Ok(())
    }

    /// The file after `name` (a rotated file just read) and its listing, listed again after
    /// it is opened by name: a rotation between listing and opening (the current file renamed
    /// aside, a new one in its place) is seen, and the renamed file read first.
    fn next(&self, name: &str) -> HostResult<Option<(Vec<String>, usize, File)>> {
        let mut names = self.set.files(self.disk)?;
        let mut prev = name.to_owned();
        for _ in 0..MAX_FILES {
            let Some(next) = names.get(after(&names, &prev, &self.set.stem)).cloned() else {
                return Ok(None);
            };
            let opened = self.open(&next)?;
            let again = self.set.files(self.disk)?;
            let k = after(&again, &prev, &self.set.stem);
            if again.get(k) == Some(&next) {
                match opened {
                    Some((f, _)) => return Ok(Some((again, k, f))),
                    // Removed since it was listed (pruned): the one after it.
                    None => prev = next,
                }
            }
            names = again;
        }
        Ok(None)
    }

    fn moved(&mut self, head: &str, head_len: u64, offset: u64, save: &mut dyn FnMut(&Position)) {
        let same = self
            .position
            .as_ref()
            .is_some_and(|q| (q.head.as_str(), q.head_len, q.offset) == (head, head_len, offset));
        if !same {
            let p = Position {
                head: head.to_owned(),
                head_len,
                offset,
                at: crate::duration::now(),
                in_key: self.in_key,
                pending: self.pending,
            };
            save(&p);
            self.position = Some(p);
        }
    }

    /// Writes lines (a piece of a long line is one), each redacted with what the line before
    /// left pending; a PEM private key's lines all go, however many chunks it spans.
    fn write_lines(&mut self, bytes: &[u8], out: &mut dyn Write) -> HostResult<()> {
        let w = |e| HostError::io("write the log to the output", e);
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            let (hidden, in_key) = key_line(self.in_key, line);
            self.in_key = in_key;
            if hidden {
                // Its indentation stays, as `diags` keeps it.
                let indent = line.iter().take_while(|b| matches!(b, b' ' | b'\t'));
                out.write_all(&line[..indent.count()]).map_err(w)?;
                out.write_all(crate::redact::REDACTED.as_bytes())
                    .map_err(w)?;
            } else {
                // A piece of a line longer than a chunk ends without its line break.
                let (text, pending) = match line.strip_suffix(b"\n") {
                    Some(line) => self.redactor.redact_line(self.pending, line),
                    None => self.redactor.redact_piece(self.pending, line),
                };
                self.pending = pending;
                out.write_all(&text).map_err(w)?;
            }
            out.write_all(b"\n").map_err(w)?;
        }
        out.flush().map_err(w)
    }

    /// Whether `offset` in `name` is inside a private key's block: the lines of the few KiB
    /// before it read as `write_lines` reads them (a reader starting there).
    fn key_before(&self, name: &str, offset: u64) -> HostResult<bool> {
        let Some((mut f, _)) = self.open(name)? else {
            return Ok(false);
        };
        let path = self.set.path(name);
        let from = offset.saturating_sub(KEY_BACK);
        let mut buf = Vec::new();
        f.seek(SeekFrom::Start(from)).map_err(read_err(&path))?;
        (&mut f)
            .take(offset - from)
            .read_to_end(&mut buf)
            .map_err(read_err(&path))?;
        let mut lines = buf.split_inclusive(|b| *b == b'\n');
        if from > 0 {
            lines.next();
        }
        let in_key = lines.fold(false, |in_key, line| key_line(in_key, line).1);
        // Its BEGIN line further back (or in a file before): lines up to an END line that a
        // key's block can all hold are a key's.
        buf.clear();
        (&mut f)
            .take(KEY_BACK)
            .read_to_end(&mut buf)
            .map_err(read_err(&path))?;
        Ok(in_key || key_ahead(&buf))
    }
}

/// Whether `ahead`'s lines, from its start, are a private key's up to its END line (`key_line`).
fn key_ahead(ahead: &[u8]) -> bool {
    for line in ahead.split_inclusive(|b| *b == b'\n') {
        match key_line(true, line) {
            (false, _) => return false,
            (true, false) => return true,
            (true, true) => {}
        }
    }
    false
}

/// How far back a reader starting inside a log looks for a private key's beginning.
const KEY_BACK: u64 = 8 * 1024;

/// Whether a line is hidden whole as part of a PEM private key, and whether a key's block
/// goes on after it: from its BEGIN line (shown, redacted) to its END line, each line
/// between that a PEM body can hold (`pem_body_line`: indented too, as klog prints each line
/// of a multi-line value after a tab and a YAML block scalar indents its lines); a line that
/// cannot be one ends the block unhidden.
fn key_line(in_key: bool, line: &[u8]) -> (bool, bool) {
    let marker = |m: &[u8]| memchr::memmem::find(line, m).is_some();
    let key = marker(b"PRIVATE KEY-----");
    let (begin, end) = (key && marker(b"-----BEGIN"), key && marker(b"-----END"));
    let body = crate::redact::pem_body_line(line);
    if in_key && (end || body) {
        (true, !end)
    } else {
        (false, begin && !end)
    }
}

#[cfg(test)]
#[path = "logs_tests.rs"]
mod tests;
