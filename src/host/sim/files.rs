//! The simulated host's file system: `C:\Program Files\x` lives at `<dir>/fs/c/program files/x`
//! (lower case, since Windows paths are case-insensitive).

use super::handle::SimHost;
use crate::files::Contents;
use crate::host::{Access, Files, HostError, HostResult, acl};
use std::path::{Path, PathBuf};

/// Whether `p` is an absolute Windows path on a drive (`C:\...`): calicoctl-win refuses a UNC
/// install root (`config::types`), and no path it hands the host is one.
pub fn is_windows_path(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/')
}

/// A path as the simulated access lists are keyed: lower case, `\`-separated, no trailing
/// separator (`c:\calicowindows`; the drive root is `c:`).
fn security_key(path: &str) -> String {
    path.to_ascii_lowercase()
        .replace('/', "\\")
        .trim_end_matches('\\')
        .to_owned()
}

impl SimHost {
    /// Where a host path lives under the state directory: names stored lower-case, and one
    /// made in another case found in any case (Microsoft Learn, "Naming Files, Paths, and
    /// Namespaces").
    fn sim_path(&self, path: &str) -> HostResult<PathBuf> {
        if !is_windows_path(path) {
            return Err(HostError::refused(
                format!("path {path}"),
                "not an absolute Windows path",
            ));
        }
        let lower = path.to_ascii_lowercase().replace('/', "\\");
        let (root, rest) = (&lower[..1], &lower[2..]);
        let mut out = self.dir.join("fs").join(root);
        for part in rest.split('\\').filter(|p| !p.is_empty() && *p != ".") {
            if part == ".." {
                return Err(HostError::refused(
                    format!("path {path}"),
                    "'..' is not allowed",
                ));
            }
            out = same_name_in(&out, part);
        }
        Ok(out)
    }

    /// The owner and access list of `path` (there, at `local`) in SDDL.
    fn security_at(&self, path: &str, local: &Path) -> HostResult<String> {
        let key = security_key(path);
        let (set, secret) = self.read(|s| (s.security.clone(), s.secrets.contains(&key)));
        if secret && local.is_file() {
            return Ok(acl::SECRET_FILE.into());
        }
        // From the drive root down: each level its own list, or what it inherits.
        let mut parts = key.split('\\');
        let drive = parts.next().unwrap_or_default().to_owned();
        let parse = |k: &str, sddl: &str| {
            acl::parse(sddl)
                .map_err(|why| HostError::refused(format!("the simulated access list of {k}"), why))
        };
        let at = |k: &str, d| set.get(k).map_or(Ok(d), |sddl| parse(k, sddl));
        let mut d = at(&drive, parse("the drive root", acl::DRIVE_ROOT)?)?;
        // Windows' own protected directories under the root.
        let shipped = |k: &str| {
            (k == "c:\\program files" || k == "c:\\program files (x86)")
                .then(|| acl::parse(acl::PROGRAM_FILES).ok())
                .flatten()
        };
        let mut so_far = drive;
        let rest: Vec<&str> = parts.filter(|p| !p.is_empty()).collect();
        for (i, part) in rest.iter().enumerate() {
            so_far = format!("{so_far}\\{part}");
            let dir = i + 1 < rest.len() || local.is_dir();
            let inherited = shipped(&so_far).unwrap_or_else(|| acl::inherited_from(&d, dir));
            d = at(&so_far, inherited)?;
        }
        Ok(acl::to_sddl(&d))
    }

    /// The host path of `local`, a place under the simulated file system (`<dir>/fs/c/x` as
    /// `c:\\x`, in the lower case the host writes); what lies outside it, as this machine names it.
    fn host_path_of(&self, local: &Path) -> String {
        let norm = |p: &Path| crate::host::files::without_verbatim(&p.to_string_lossy());
        let root =
            std::fs::canonicalize(self.dir.join("fs")).unwrap_or_else(|_| self.dir.join("fs"));
        let (root, local) = (norm(&root), norm(local));
        let rest = local
            .get(..root.len())
            .filter(|r| r.eq_ignore_ascii_case(&root))
            .and_then(|_| local.get(root.len()..));
        let Some(rest) = rest else {
            return local;
        };
        let mut parts = rest.split(['/', '\\']).filter(|p| !p.is_empty());
        match parts.next() {
            Some(drive) => std::iter::once(format!("{drive}:"))
                .chain(parts.map(str::to_owned))
                .collect::<Vec<_>>()
                .join("\\"),
            None => local,
        }
    }

    /// One mutating call writing `path` (`put`), the secrets list saved.
    fn write(&self, path: &str, contents: Contents<'_>, access: Access) -> HostResult<()> {
        self.mutate(&format!("write {path}"), |_| Ok(()))?;
        self.put(path, contents, access)?;
        self.save(&self.lock())
    }

    /// Writes a file atomically from bytes or, streamed, from a local file, without counting
    /// a mutating call or saving (profiles seed files this way).
    pub(super) fn put(&self, path: &str, contents: Contents<'_>, access: Access) -> HostResult<()> {
        let local = self.sim_path(path)?;
        let op = |what: &str| format!("{what} {path} (simulated at {})", local.display());
        if let Some(parent) = local.parent() {
            fs_err::create_dir_all(parent).map_err(|e| HostError::io(op("create parent of"), e))?;
        }
        let name = local
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = local.with_file_name(format!(".{name}.calicoctl-win.tmp"));
        // As on Windows: a secret's temporary file is restricted before the secret is in it.
        let _ = std::fs::remove_file(&tmp);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(if access == Access::Secret {
                0o600
            } else {
                0o644
            });
        }
        let mut file = options
            .open(&tmp)
            .map_err(|e| HostError::io(op("create the temporary file for"), e))?;
        contents
            .write_into(&mut file)
            .map_err(|e| HostError::io(op("write"), e))?;
        drop(file);
        self.pause_if_due_in_write(path);
        fs_err::rename(&tmp, &local).map_err(|e| HostError::io(op("replace"), e))?;
        let key = path.to_ascii_lowercase();
        let mut state = self.lock();
        // The renamed temporary keeps its own security (Microsoft KB310316).
        state.security.remove(&security_key(path));
        if access == Access::Secret {
            state.secrets.insert(key);
        } else {
            state.secrets.remove(&key);
        }
        Ok(())
    }
}

impl Files for SimHost {
    fn read_file(&self, path: &str) -> HostResult<Option<Vec<u8>>> {
        crate::host::read_capped(&self.sim_path(path)?, path)
    }

    fn replace_file(&self, path: &str, contents: &[u8], access: Access) -> HostResult<()> {
        self.write(path, Contents::Bytes(contents), access)
    }

    fn file_access(&self, path: &str) -> HostResult<Option<Access>> {
        if !self.sim_path(path)?.is_file() {
            return Ok(None);
        }
        let secret = self.read(|s| s.secrets.contains(&path.to_ascii_lowercase()));
        Ok(Some(Access::secret_if(secret)))
    }

    fn copy_in(&self, from: &Path, to: &str) -> HostResult<()> {
        self.write(to, Contents::File(from), Access::Normal)
    }

    fn copy_file(&self, from: &str, to: &str, access: Access) -> HostResult<bool> {
        let local = self.sim_path(from)?;
        if !local.is_file() {
            return Ok(false);
        }
        self.write(to, Contents::File(&local), access)?;
        Ok(true)
    }

    fn remove_file(&self, path: &str) -> HostResult<bool> {
        let local = self.sim_path(path)?;
        self.mutate(&format!("remove {path}"), |s| {
            s.secrets.remove(&path.to_ascii_lowercase());
            s.security.remove(&security_key(path));
            let _ = std::fs::remove_file(crate::files::temporary_of(&local));
            removed(std::fs::remove_file(&local), path)
        })
    }

    fn open_write(&self, path: &str, append: bool) -> HostResult<std::fs::File> {
        let local = self.sim_path(path)?;
        // Not "write ...": a pause there would wait for an atomic write's temporary file.
        self.mutate(&format!("open {path} to write"), |_| {
            crate::host::open_to_write(&local, path, append)
        })
    }

    fn rename(&self, from: &str, to: &str) -> HostResult<()> {
        let (f, t) = (self.sim_path(from)?, self.sim_path(to)?);
        self.mutate(&format!("rename {from} to {to}"), |_| {
            fs_err::rename(&f, &t).map_err(|e| HostError::io(format!("rename {from} to {to}"), e))
        })
    }

    fn remove_tree(&self, path: &str) -> HostResult<bool> {
        let local = self.sim_path(path)?;
        self.mutate(&format!("remove directory {path} and all it holds"), |s| {
            let prefix = format!("{}\\", security_key(path));
            s.security
                .retain(|k, _| k != &security_key(path) && !k.starts_with(&prefix));
            let lower = format!("{}\\", path.to_ascii_lowercase());
            s.secrets.retain(|k| !k.starts_with(&lower));
            removed(std::fs::remove_dir_all(&local), path)
        })
    }

    fn remove_empty_dir(&self, path: &str) -> HostResult<bool> {
        let local = self.sim_path(path)?;
        self.mutate(&format!("remove directory {path}"), |s| {
            // As on Windows: what killed atomic writes left does not keep a directory.
            crate::files::remove_stale_temporaries(&local);
            match std::fs::read_dir(&local) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // Gone already (removed by this machine's file calls): so is its list.
                    s.security.remove(&security_key(path));
                    Ok(false)
                }
                Err(e) => Err(HostError::io(format!("list {path}"), e)),
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        return Ok(false);
                    }
                    s.security.remove(&security_key(path));
                    std::fs::remove_dir(&local)
                        .map(|()| true)
                        .map_err(|e| HostError::io(format!("remove directory {path}"), e))
                }
            }
        })
    }

    /// As on Windows (`windows::files::open_update`): the last name never followed, where
    /// the handle led read from it (`handle_final_path`).
    fn open_update(&self, path: &str) -> HostResult<Option<crate::host::OpenedFile>> {
        let hook = self
            .before_open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(hook) = hook {
            hook();
        }
        let local = self.sim_path(path)?;
        if !local.is_file() {
            return Ok(None);
        }
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&local)
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            r => r.map_err(|e| HostError::io(format!("open {path} to write"), e))?,
        };
        let read = |e| HostError::io(format!("read where {path} was opened"), e);
        let link = std::fs::symlink_metadata(&local)
            .map_err(read)?
            .is_symlink();
        // A link at the last name is opened itself on Windows (FILE_FLAG_OPEN_REPARSE_POINT):
        // its final path is its own.
        let final_path = match (link, local.parent(), local.file_name()) {
            (true, Some(dir), Some(name)) => {
                self.host_path_of(&std::fs::canonicalize(dir).map_err(read)?.join(name))
            }
            _ => self.host_path_of(&handle_final_path(&file, &local).map_err(read)?),
        };
        let sole_plain = crate::host::lock::is_sole_plain_file(&file, &local).map_err(read)?;
        Ok(Some(crate::host::OpenedFile {
            file,
            final_path,
            sole_plain,
        }))
    }

    fn final_path(&self, path: &str) -> HostResult<Option<String>> {
        let local = self.sim_path(path)?;
        crate::host::files::resolve_final(&local)
            .map(|p| p.map(|p| self.host_path_of(&p)))
            .map_err(|e| HostError::io(format!("read where {path} leads"), e))
    }

    fn dir_exists(&self, path: &str) -> HostResult<bool> {
        Ok(self.sim_path(path)?.is_dir())
    }

    /// A symbolic link in the simulated file system stands for a junction: like one, it sends
    /// what is written through it, and an access list set on it, to wherever it points.
    fn is_reparse_point(&self, path: &str) -> HostResult<bool> {
        Ok(std::fs::symlink_metadata(self.sim_path(path)?)
            .is_ok_and(|m| m.file_type().is_symlink()))
    }

    fn security(&self, path: &str) -> HostResult<Option<String>> {
        let local = self.sim_path(path)?;
        if !local.exists() {
            return Ok(None);
        }
        self.security_at(path, &local).map(Some)
    }

    /// The simulated lists are kept by path and never follow a link: a symbolic link's (a
    /// junction's) own, or what it inherits where it stands; one pointing nowhere has one too.
    fn link_security(&self, path: &str) -> HostResult<Option<String>> {
        let local = self.sim_path(path)?;
        if local.symlink_metadata().is_err() {
            return Ok(None);
        }
        self.security_at(path, &local).map(Some)
    }

    fn create_dir(&self, path: &str) -> HostResult<bool> {
        let local = self.sim_path(path)?;
        self.mutate(&format!("create directory {path}"), |_| {
            if local.is_dir() {
                return Ok(false);
            }
            fs_err::create_dir_all(&local)
                .map(|()| true)
                .map_err(|e| HostError::io(format!("create directory {path}"), e))
        })
    }

    fn set_security(&self, path: &str, sddl: &str) -> HostResult<()> {
        let d = acl::parse(sddl)
            .map_err(|why| HostError::refused(format!("the access list for {path}"), why))?;
        // As SetNamedSecurityInfo does with an unprotected list: the entries marked inherited
        // are the parent's, computed again, so a list of only those is inheritance restored.
        let inherits = !d.protected && d.aces.iter().all(|a| a.inherited);
        if !self.sim_path(path)?.exists() {
            return Err(HostError::not_found(path.to_owned()));
        }
        self.mutate(&format!("set the access list of {path}"), |s| {
            if inherits {
                s.security.remove(&security_key(path));
            } else {
                s.security.insert(security_key(path), sddl.to_owned());
            }
            Ok(())
        })
    }

    fn local_path(&self, path: &str) -> HostResult<PathBuf> {
        self.sim_path(path)
    }
}

/// Whether a removal removed something: gone already is `false`.
fn removed(r: std::io::Result<()>, path: &str) -> HostResult<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(HostError::io(format!("remove {path}"), e)),
    }
}

/// Where the open `file` is, as `GetFinalPathNameByHandleW` says: `/proc/self/fd/N` on Linux
/// (proc(5)), the call itself under Wine, `local` resolved elsewhere.
fn handle_final_path(file: &std::fs::File, local: &Path) -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let _ = local;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
    }
    #[cfg(windows)]
    {
        let _ = local;
        crate::host::windows::files::final_path_of(file).map(PathBuf::from)
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        let _ = file;
        std::fs::canonicalize(local)
    }
}

/// `dir\name` (`name` in lower case), or the entry of `dir` whose name is `name` in another
/// case when there is one.
fn same_name_in(dir: &Path, name: &str) -> PathBuf {
    let exact = dir.join(name);
    if exact.symlink_metadata().is_ok() {
        return exact;
    }
    std::fs::read_dir(dir)
        .ok()
        .and_then(|entries| {
            entries
                .flatten()
                .find(|e| e.file_name().to_string_lossy().to_ascii_lowercase() == name)
        })
        .map_or(exact, |e| e.path())
}

#[cfg(test)]
mod case_tests {
    use crate::host::Files;
    use crate::host::sim::SimHost;

    #[test]
    fn a_name_made_in_another_case_outside_the_host_is_found_in_any_case() {
        let h = SimHost::in_memory("ws2022").expect("host");
        let cache = h.local_path(r"C:\CalicoWindows\cache").expect("path");
        fs_err::create_dir_all(cache.join("staging-AqgjoB").join("Inner")).expect("mkdir");
        let listed = h.list_dir(r"C:\CalicoWindows\cache").expect("list");
        let names: Vec<String> = listed.into_iter().flatten().map(|e| e.name).collect();
        assert_eq!(names, ["staging-AqgjoB"]);
        assert!(
            h.dir_exists(r"C:\CalicoWindows\CACHE\staging-aqgjob\inner")
                .expect("exists")
        );
        assert!(
            h.remove_tree(r"C:\CalicoWindows\cache\staging-AqgjoB")
                .expect("remove")
        );
        assert!(!cache.join("staging-AqgjoB").exists());
    }
}
