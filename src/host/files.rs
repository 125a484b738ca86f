//! The host's file system: the `Files` trait, and the capped read both hosts share.

use super::error::{HostError, HostResult};
use super::sharing;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Who may read a written file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// The directory's defaults.
    Normal,
    /// SYSTEM and Administrators only (0600 on the simulated host): tokens and keys.
    Secret,
}

impl Access {
    /// `Secret` for a secret file, else `Normal`.
    pub fn secret_if(secret: bool) -> Self {
        if secret { Self::Secret } else { Self::Normal }
    }
}

/// The most `Files::read_file` reads of one file (every file read whole is far smaller);
/// enforced while reading.
pub const READ_CAP: u64 = 64 << 20;

/// Reads `local` (named `path` in errors) whole, at most `READ_CAP`; `None` when missing.
pub fn read_capped(local: &std::path::Path, path: &str) -> HostResult<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match std::fs::File::open(local) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HostError::io(format!("read {path}"), e)),
    };
    let mut out = Vec::new();
    file.take(READ_CAP + 1)
        .read_to_end(&mut out)
        .map_err(|e| HostError::io(format!("read {path}"), e))?;
    if out.len() as u64 > READ_CAP {
        return Err(HostError::refused(
            format!("read {path}"),
            format!(
                "it is larger than {} MiB, the most calicoctl-win reads of one file",
                READ_CAP >> 20
            ),
        ));
    }
    Ok(Some(out))
}

/// Opens `local`, the host's `path`, to write (emptied or appended), making its directories.
pub(crate) fn open_to_write(
    local: &std::path::Path,
    path: &str,
    append: bool,
) -> HostResult<std::fs::File> {
    if let Some(parent) = local.parent() {
        fs_err::create_dir_all(parent)
            .map_err(|e| HostError::io(format!("create the directory of {path}"), e))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .open(local)
        .map_err(|e| HostError::io(format!("write {path}"), e))
}

/// A file opened to be written in place (`Files::open_update`), with what its handle says of
/// the file it opened (not the name).
pub struct OpenedFile {
    pub file: std::fs::File,
    /// The handle's final path, every junction and link on the way resolved (`\\?\` aside).
    pub final_path: String,
    /// A plain file with one name: a hard link would have another file written.
    pub sole_plain: bool,
}

/// Whether two final paths name the same place, case and the `\\?\` prefix aside.
pub fn same_final_path(a: &str, b: &str) -> bool {
    without_verbatim(a).eq_ignore_ascii_case(&without_verbatim(b))
}

/// `\\?\C:\x` as `C:\x`, `\\?\UNC\server\x` as `\\server\x` (Microsoft, "Naming Files,
/// Paths, and Namespaces").
pub fn without_verbatim(p: &str) -> String {
    if let Some(unc) = p.strip_prefix("\\\\?\\UNC\\") {
        return format!("\\\\{unc}");
    }
    p.strip_prefix("\\\\?\\").unwrap_or(p).to_owned()
}

/// Where `local` leads now (`canonicalize`); for a missing file its directory's with its name.
pub(crate) fn resolve_final(local: &Path) -> std::io::Result<Option<std::path::PathBuf>> {
    match std::fs::canonicalize(local) {
        Ok(p) => return Ok(Some(p)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let (Some(dir), Some(name)) = (local.parent(), local.file_name()) else {
        return Ok(None);
    };
    match std::fs::canonicalize(dir) {
        Ok(d) => Ok(Some(d.join(name))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// An entry of a directory on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    /// A directory itself, not a link or junction to one.
    pub is_dir: bool,
}

/// Whether `dir` is a drive (`C:`) or a UNC share's root, where the walks up stop.
fn is_volume_root(dir: &str) -> bool {
    dir.len() <= 2
        || dir.ends_with(':')
        || dir.starts_with("\\\\") && dir.matches('\\').count() <= 3
}

/// The host's file system.
pub trait Files {
    fn read_file(&self, path: &str) -> HostResult<Option<Vec<u8>>>;
    /// Writes only when the content or access differs; returns whether it wrote.
    fn write_file(&self, path: &str, contents: &[u8], access: Access) -> HostResult<bool> {
        if self.read_file(path)?.as_deref() == Some(contents)
            && self.file_access(path)? == Some(access)
        {
            return Ok(false);
        }
        self.replace_file(path, contents, access)?;
        Ok(true)
    }
    /// Writes atomically (temporary, then rename), making parents; a secret restricted first.
    fn replace_file(&self, path: &str, contents: &[u8], access: Access) -> HostResult<()>;
    /// The access a file was written with, `None` if it does not exist.
    fn file_access(&self, path: &str) -> HostResult<Option<Access>>;
    /// Copies a file of this machine (calicoctl-win itself) onto the host, atomically.
    fn copy_in(&self, from: &Path, to: &str) -> HostResult<()>;
    /// Copies a host file to another path with `access`, streamed and atomically; `false`
    /// when `from` does not exist.
    fn copy_file(&self, from: &str, to: &str, access: Access) -> HostResult<bool>;
    /// Removes a file; returns whether it existed.
    fn remove_file(&self, path: &str) -> HostResult<bool>;
    /// Removes a directory if it is empty; returns whether it was removed.
    fn remove_empty_dir(&self, path: &str) -> HostResult<bool>;
    /// Removes a directory and all in it (links removed, never followed); whether it was there.
    fn remove_tree(&self, path: &str) -> HostResult<bool>;
    /// A directory's entries sorted by name, not followed; `None` when it does not exist.
    fn list_dir(&self, path: &str) -> HostResult<Option<Vec<DirEntry>>> {
        let local = self.local_path(path)?;
        let entries = match std::fs::read_dir(&local) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(HostError::io(format!("list {path}"), e)),
        };
        let mut out = Vec::new();
        for e in entries {
            let e = e.map_err(|e| HostError::io(format!("list {path}"), e))?;
            let is_dir = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir());
            out.push(DirEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                is_dir,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Some(out))
    }
    /// A file's size and modification time (ns since 1970); `None` without a regular file.
    fn stat(&self, path: &str) -> HostResult<Option<(u64, u128)>> {
        let local = self.local_path(path)?;
        let Ok(meta) = std::fs::metadata(&local) else {
            return Ok(None);
        };
        if !meta.is_file() {
            return Ok(None);
        }
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Some((meta.len(), modified)))
    }
    /// The SHA-256 of a file, streamed, in hex; `None` when there is no file at `path`.
    fn sha256(&self, path: &str) -> HostResult<Option<String>> {
        let local = self.local_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        crate::files::sha256_file(&local)
            .map(Some)
            .map_err(|e| HostError::io(format!("read {path}"), e))
    }
    /// The last `max` bytes of a file from its first whole line; `None` without a file.
    fn read_tail(&self, path: &str, max: u64) -> HostResult<Option<Vec<u8>>> {
        let local = self.local_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        crate::files::read_tail(&local, max)
            .map(Some)
            .map_err(|e| HostError::io(format!("read {path}"), e))
    }
    /// A file opened for reading (also while another handle writes it); `None` when there is
    /// no regular file. Shares read, write and delete (std's `OpenOptions::new` on Windows).
    fn open_read(&self, path: &str) -> HostResult<Option<std::fs::File>> {
        let local = self.local_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        // Gone between the two (a log rotated aside): as if it had not been there.
        match std::fs::File::open(&local) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            r => r
                .map(Some)
                .map_err(|e| HostError::io(format!("read {path}"), e)),
        }
    }
    /// An existing regular file opened to read and write in place, with what its handle says
    /// of it (`OpenedFile`): its last name never followed; `None` when there is no such file.
    fn open_update(&self, path: &str) -> HostResult<Option<OpenedFile>>;
    /// Where `path` leads now, every link resolved (`GetFinalPathNameByHandleW`); for a file
    /// not there yet, its directory's with its name; `None` without that directory either.
    fn final_path(&self, path: &str) -> HostResult<Option<String>>;
    /// A file opened for writing, its parent directories created: emptied, or appended to
    /// (`append`). For the release's download and staging only.
    fn open_write(&self, path: &str, append: bool) -> HostResult<std::fs::File> {
        open_to_write(&self.local_path(path)?, path, append)
    }
    /// Renames a file over `to` (std's `rename`: `MoveFileExW`, `MOVEFILE_REPLACE_EXISTING`).
    fn rename(&self, from: &str, to: &str) -> HostResult<()> {
        let (f, t) = (self.local_path(from)?, self.local_path(to)?);
        // A Go reader's handle blocks a rename for a moment on Windows (`sharing`).
        sharing::on_windows(|| std::fs::rename(&f, &t))
            .map_err(|e| HostError::io(format!("rename {from} to {to}"), e))
    }
    fn dir_exists(&self, path: &str) -> HostResult<bool>;
    /// The parent directories of `path` that do not exist yet, outermost first.
    fn missing_parents(&self, path: &str) -> HostResult<Vec<String>> {
        let mut out = Vec::new();
        let mut cur = path;
        while let Some((parent, _)) = cur.rsplit_once('\\') {
            if is_volume_root(parent) {
                break;
            }
            if self.dir_exists(parent)? {
                break;
            }
            out.push(parent.to_owned());
            cur = parent;
        }
        out.reverse();
        Ok(out)
    }

    /// The parent directories of `path` a new install may call its own, outermost first:
    /// missing, or holding only killed writes' temporaries.
    fn vacant_parents(&self, path: &str) -> HostResult<Vec<String>> {
        let mut out = self.missing_parents(path)?;
        let mut cur = out.first().map_or(path, String::as_str).to_owned();
        while let Some((parent, _)) = cur.rsplit_once('\\') {
            if is_volume_root(parent) || !self.is_vacant(parent)? {
                break;
            }
            out.insert(0, parent.to_owned());
            cur = parent.to_owned();
        }
        Ok(out)
    }

    /// Whether `dir` (a host path) holds only temporaries of killed writes and vacant directories.
    fn is_vacant(&self, dir: &str) -> HostResult<bool> {
        let Some(entries) = self.list_dir(dir)? else {
            return Ok(false);
        };
        for e in entries {
            let vacant = if e.is_dir {
                self.is_vacant(&crate::layout::join(dir, &e.name))?
            } else {
                crate::files::is_stale_temporary(&e.name)
            };
            if !vacant {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Removes vacant `dir` (`is_vacant`), its vacant subdirectories first; whether it is gone.
    fn remove_vacant(&self, dir: &str) -> HostResult<bool> {
        if !self.is_vacant(dir)? {
            return Ok(false);
        }
        for e in self.list_dir(dir)?.unwrap_or_default() {
            if e.is_dir {
                self.remove_vacant(&crate::layout::join(dir, &e.name))?;
            }
        }
        self.remove_empty_dir(dir)
    }
    /// The owner and DACL in SDDL, read by `acl`; `None` when it does not exist.
    fn security(&self, path: &str) -> HostResult<Option<String>>;
    /// The owner and DACL of `path` itself, a link's own, never its target's; `None` if none.
    fn link_security(&self, path: &str) -> HostResult<Option<String>>;
    /// Creates a directory and its parents; `false` when it was there.
    fn create_dir(&self, path: &str) -> HostResult<bool>;
    /// Whether `path` itself is a reparse point, not followed; `false` when missing. Any user
    /// may `mklink /J` where they may make a directory.
    fn is_reparse_point(&self, path: &str) -> HostResult<bool>;
    /// Gives an existing file or directory `sddl`'s owner and DACL (protected with `P`).
    fn set_security(&self, path: &str, sddl: &str) -> HostResult<()>;
    /// Where a host path lives in this machine's file system (the path itself on Windows, a
    /// file under the state directory on SimHost), for the service logs another program opens.
    fn local_path(&self, path: &str) -> HostResult<std::path::PathBuf>;
}

#[cfg(test)]
mod read_cap_tests {
    #[test]
    fn a_file_past_the_read_cap_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big");
        // Sparse: the size is set, nothing is written.
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(super::READ_CAP + 1))
            .expect("sparse file");
        let e = super::read_capped(&big, r"C:\big").expect_err("over the cap");
        assert!(e.to_string().contains("larger than 64 MiB"), "{e}");
        assert!(e.to_string().contains(r"C:\big"), "{e}");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(10))
            .expect("small");
        assert_eq!(
            super::read_capped(&big, "x").expect("read"),
            Some(vec![0; 10])
        );
        assert_eq!(
            super::read_capped(&dir.path().join("none"), "x").expect("read"),
            None
        );
    }
}
