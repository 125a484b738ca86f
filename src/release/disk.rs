//! Where a release is downloaded and unpacked: the node's file system under the install root's
//! cache (`host::ReleaseDisk`), or this machine's ([`Local`]: `fetch release`, a dry run, a zip
//! given on the command line). Paths and handles are the disk's own.

use std::fs::File;
use std::io;
use std::path::Path;

/// A file system the release is written to and read from.
pub trait Disk: Sync {
    /// `name` in `dir`.
    fn join(&self, dir: &str, name: &str) -> String;
    /// A file opened for reading; `None` when there is no regular file at `path`.
    fn open(&self, path: &str) -> io::Result<Option<File>>;
    /// A file opened for writing (emptied, or appended to), its directories created.
    fn write(&self, path: &str, append: bool) -> io::Result<File>;
    /// Renames a file, replacing what had `to`'s name.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file; nothing there is no error.
    fn remove_file(&self, path: &str) -> io::Result<()>;
    /// Creates a directory and its parents.
    fn create_dir(&self, path: &str) -> io::Result<()>;
    /// A directory's entries (name, whether a directory itself, never a link to one), sorted
    /// by name; `None` when there is no such directory.
    fn list(&self, dir: &str) -> io::Result<Option<Vec<(String, bool)>>>;
    /// Removes a directory and all it holds; nothing there is no error.
    fn remove_tree(&self, path: &str) -> io::Result<()>;
    /// Whether the files are on the node (the plan copies them there with the host's own
    /// copy) rather than on this machine.
    fn on_node(&self) -> bool;

    /// Whether a regular file is at `path`.
    fn is_file(&self, path: &str) -> io::Result<bool> {
        Ok(self.open(path)?.is_some())
    }
}

/// This machine's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Local;

fn not_utf8(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is not a UTF-8 path", p.display()),
    )
}

impl Local {
    /// A path of this machine as the disk names it.
    pub fn name(p: &Path) -> io::Result<String> {
        p.to_str().map(str::to_owned).ok_or_else(|| not_utf8(p))
    }
}

impl Disk for Local {
    fn join(&self, dir: &str, name: &str) -> String {
        Path::new(dir).join(name).to_string_lossy().into_owned()
    }

    fn open(&self, path: &str) -> io::Result<Option<File>> {
        if !Path::new(path).is_file() {
            return Ok(None);
        }
        fs_err::File::open(path).map(|f| Some(f.into_parts().0))
    }

    fn write(&self, path: &str, append: bool) -> io::Result<File> {
        if let Some(parent) = Path::new(path).parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map(|f| f.into_parts().0)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        fs_err::rename(from, to)
    }

    fn remove_file(&self, path: &str) -> io::Result<()> {
        match fs_err::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    fn create_dir(&self, path: &str) -> io::Result<()> {
        fs_err::create_dir_all(path)
    }

    fn list(&self, dir: &str) -> io::Result<Option<Vec<(String, bool)>>> {
        let entries = match fs_err::read_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            r => r?,
        };
        let mut out = Vec::new();
        for e in entries {
            let e = e?;
            let is_dir = e.file_type()?.is_dir();
            let name = e.file_name();
            let name = name.to_str().ok_or_else(|| not_utf8(&e.path()))?;
            out.push((name.to_owned(), is_dir));
        }
        out.sort();
        Ok(Some(out))
    }

    fn remove_tree(&self, path: &str) -> io::Result<()> {
        match fs_err::remove_dir_all(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    fn on_node(&self) -> bool {
        false
    }
}

/// A disk a dry run reads (the node's cache, whose zip it may use): whatever would change it
/// is refused, so a refused zip stays where it is.
pub struct ReadOnly<'a>(pub &'a dyn Disk);

fn refused(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("a dry run does not change {path}"),
    )
}

impl Disk for ReadOnly<'_> {
    fn join(&self, dir: &str, name: &str) -> String {
        self.0.join(dir, name)
    }
    fn open(&self, path: &str) -> io::Result<Option<File>> {
        self.0.open(path)
    }
    fn write(&self, path: &str, _: bool) -> io::Result<File> {
        Err(refused(path))
    }
    fn rename(&self, from: &str, _: &str) -> io::Result<()> {
        Err(refused(from))
    }
    fn remove_file(&self, path: &str) -> io::Result<()> {
        Err(refused(path))
    }
    fn create_dir(&self, path: &str) -> io::Result<()> {
        Err(refused(path))
    }
    fn list(&self, dir: &str) -> io::Result<Option<Vec<(String, bool)>>> {
        self.0.list(dir)
    }
    fn remove_tree(&self, path: &str) -> io::Result<()> {
        Err(refused(path))
    }
    fn on_node(&self) -> bool {
        self.0.on_node()
    }
}

/// A path on a disk: a zip to read, a directory to extract into.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub disk: &'a dyn Disk,
    pub path: &'a str,
}

impl<'a> Place<'a> {
    pub fn new(disk: &'a dyn Disk, path: &'a str) -> Self {
        Self { disk, path }
    }

    /// `name` in this directory.
    pub fn join(&self, name: &str) -> String {
        self.disk.join(self.path, name)
    }

    /// The file opened anew for reading (each reader has its own handle and position).
    pub fn open(&self) -> io::Result<File> {
        self.disk.open(self.path)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("there is no file {}", self.path),
            )
        })
    }
}
