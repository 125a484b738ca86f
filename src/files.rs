//! Writing files atomically and only when their content changed.

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Bytes as lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Hex SHA-256 of a file on this machine, read in blocks: a release binary is never held
/// in memory.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    sha256_read(std::fs::File::open(path)?)
}

/// Hex SHA-256 of what a reader gives, read in blocks.
pub fn sha256_read(mut f: impl std::io::Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = std::io::Read::read(&mut f, &mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// The most a small input file (a config, a kubeconfig, a config.ps1, a CA bundle, a CNI
/// template) may hold: far more than any real one.
pub const SMALL_FILE_CAP: u64 = 16 << 20;

/// Reads a file given on the command line or in the config, which must be a regular file (a
/// FIFO or a device would block or never end) of at most `cap` bytes. The error names the
/// path and what is wrong with it.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let what = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let cannot = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
    };
    let meta = fs_err::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(what(format!(
            "{} is not a regular file (a directory, a pipe or a device)",
            path.display()
        )));
    }
    let mut out = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(cap + 1).read_to_end(&mut out))
        .map_err(cannot)?;
    if out.len() as u64 > cap {
        return Err(what(format!(
            "{} is larger than {} MB, more than such a file ever holds",
            path.display(),
            cap >> 20
        )));
    }
    Ok(out)
}

/// The end of a file, at most `max` bytes from its first whole line, never reading the rest
/// (the tail of a service log).
pub fn read_tail(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let from = f.metadata()?.len().saturating_sub(max);
    f.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes)?;
    if from > 0
        && let Some(i) = bytes.iter().position(|&c| c == b'\n')
    {
        bytes.drain(..=i);
    }
    Ok(bytes)
}

/// `read_capped` as UTF-8 text.
pub fn read_text_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, cap)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

/// Whether `path` already holds exactly `contents`.
pub fn unchanged(path: &Path, contents: &[u8]) -> bool {
    fs_err::read(path).is_ok_and(|old| old == contents)
}

/// Why a file cannot be written where it was asked for.
#[derive(Debug, thiserror::Error)]
pub enum OutFileError {
    #[error(
        "{} is {kind}, not a regular file: calicoctl-win replaces only regular files and never writes into a device or a pipe",
        .path.display()
    )]
    NotAFile {
        path: std::path::PathBuf,
        kind: &'static str,
    },
    #[error("the directory {} of {} does not exist", .dir.display(), .path.display())]
    NoDirectory {
        path: std::path::PathBuf,
        dir: std::path::PathBuf,
    },
}

impl OutFileError {
    pub fn hint(&self) -> String {
        match self {
            Self::NotAFile { .. } => "name a regular file, or write to standard output with '--out-file -' and redirect it".into(),
            Self::NoDirectory { dir, .. } => format!("create it first ('mkdir {}') or name a file in an existing directory", dir.display()),
        }
    }
}

impl crate::error::Diagnose for OutFileError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        crate::error::Diagnosis::new(
            crate::error::Exit::Usage,
            crate::error::Kind::Usage,
            self.hint(),
        )
    }
}

/// Whether an `--out-file` argument means standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Checks that `path` may be written by an atomic replace: it is a regular file or absent
/// (a symbolic link is judged by what it names), in a directory that exists. Looks at the
/// target's type without opening it, so a FIFO never blocks and a device is never replaced.
pub fn check_target(path: &Path) -> Result<(), OutFileError> {
    match fs_err::metadata(path) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(m) => {
            return Err(OutFileError::NotAFile {
                path: path.to_owned(),
                kind: kind_of(&m),
            });
        }
        Err(_) => {}
    }
    let dir = dir_of(path);
    if !dir.is_dir() {
        return Err(OutFileError::NoDirectory {
            path: path.to_owned(),
            dir: dir.to_owned(),
        });
    }
    Ok(())
}

/// The directory `path` is in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// What a file that is not a regular one is, in words.
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    if m.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file (a device, pipe or socket)"
}

/// Writes `contents` to `path` through a temporary file in the same directory and a rename,
/// so a reader never sees half a file. Returns whether the file changed. Refuses a target
/// that is not a regular file (`check_target`).
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<bool> {
    check_target(path)?;
    if unchanged(path, contents) {
        return Ok(false);
    }
    replace(path, contents, true, false)?;
    Ok(true)
}

/// `write_atomic` without the flushes that make it survive a power loss: for a simulated
/// host's state, which models none, written at every change a test makes.
pub fn write_atomic_volatile(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    check_target(path)?;
    replace(path, contents, false, false)
}

/// Writes `contents` to `path`'s temporary file and renames it over `path`, flushed to the
/// disk first when `durable` (`rename_durably`). A `secret`'s temporary file is made anew,
/// readable and writable by its owner only (0600), before anything is written into it; on
/// Windows it takes its directory's access list: the admin's own folder, where one is made.
fn replace(path: &Path, contents: &[u8], durable: bool, secret: bool) -> anyhow::Result<()> {
    let tmp = temporary_of(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if secret {
        let _ = fs_err::remove_file(&tmp);
        options.create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    } else {
        options.create(true).truncate(true);
    }
    let written = options.open(&tmp).and_then(|mut f| {
        std::io::Write::write_all(&mut f, contents)?;
        if durable { f.sync_all() } else { Ok(()) }
    });
    written.with_context(|| format!("cannot write {}", tmp.display()))?;
    let renamed = if durable {
        rename_durably(&tmp, path)
    } else {
        fs_err::rename(&tmp, path)
    };
    renamed
        .inspect_err(|_| {
            let _ = fs_err::remove_file(&tmp);
        })
        .with_context(|| format!("cannot replace {}", path.display()))
}

/// Renames `tmp` (written and flushed) over `path`, the directory flushed after it so that the
/// rename survives a power loss (fsync(2)); on Windows the file renamed is flushed
/// (`FlushFileBuffers`) as far as it may be opened (the node's writes: `rename_through`).
pub fn rename_durably(tmp: &Path, path: &Path) -> std::io::Result<()> {
    fs_err::rename(tmp, path)?;
    #[cfg(windows)]
    {
        if let Ok(renamed) = std::fs::OpenOptions::new().write(true).open(path) {
            let _ = renamed.sync_all();
        }
        Ok(())
    }
    #[cfg(not(windows))]
    {
        // The rename has happened: a directory that cannot be opened for reading (mode 0300)
        // or a filesystem that refuses fsync on a directory does not make it a failure.
        if let Ok(d) = std::fs::File::open(dir_of(path)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// Like `write_atomic`, for a credential on this machine (`replace`'s `secret`).
pub fn write_secret(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    check_target(path)?;
    replace(path, contents, true, true)
}

/// Where an atomic write takes its contents from: bytes in memory, or a file on this machine
/// copied in a stream (a release binary is never held whole in memory).
#[derive(Clone, Copy, Debug)]
pub enum Contents<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

impl Contents<'_> {
    /// Writes the contents into `to`, an open (new, empty) file.
    pub fn write_into(self, to: &mut std::fs::File) -> std::io::Result<()> {
        match self {
            Self::Bytes(b) => std::io::Write::write_all(to, b),
            Self::File(p) => std::io::copy(&mut std::fs::File::open(p)?, to).map(|_| ()),
        }
    }
}

/// Whether `name` is a temporary file of an atomic write (`.NAME.calicoctl-win.tmp`), which
/// only a run killed between writing and renaming leaves behind.
pub fn is_stale_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".calicoctl-win.tmp")
}

/// Removes the temporary files killed writes left in `dir`.
pub fn remove_stale_temporaries(dir: &Path) {
    if let Ok(entries) = fs_err::read_dir(dir) {
        for e in entries.flatten() {
            if is_stale_temporary(&e.file_name().to_string_lossy()) && e.path().is_file() {
                let _ = fs_err::remove_file(e.path());
            }
        }
    }
}

/// The temporary file an atomic write of `path` goes through (`.NAME.calicoctl-win.tmp`
/// beside it); removing `path` removes it too, as a killed write may have left it.
pub fn temporary_of(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.calicoctl-win.tmp"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_capped_read_takes_a_file_of_the_cap_and_refuses_one_byte_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.yaml");
        fs_err::write(&path, vec![b'a'; 1024]).expect("write");
        assert_eq!(
            super::read_text_capped(&path, 1024)
                .expect("a file of the cap")
                .len(),
            1024
        );
        let e = super::read_text_capped(&path, 1023)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.yaml") && e.contains("larger than"), "{e}");
    }

    #[test]
    fn a_tail_is_the_end_from_its_first_whole_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("calico-node.log");
        fs_err::write(&path, "first line\nsecond line\nthird\n").expect("write");
        assert_eq!(super::read_tail(&path, 14).expect("tail"), b"third\n");
        assert_eq!(
            super::read_tail(&path, 1000).expect("tail"),
            b"first line\nsecond line\nthird\n"
        );
    }
}
