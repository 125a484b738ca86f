//! Files: atomic writes, and an access list of SYSTEM and Administrators for secrets.

use super::ffi::{wide, with_token};
use crate::files::Contents;
use crate::host::{Access, HostError, HostResult};
use std::path::Path;
use windows_sys::Win32::Foundation::LocalFree;
use windows_sys::Win32::Security::Authorization::{
    ConvertSecurityDescriptorToStringSecurityDescriptorW,
    ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1, SE_FILE_OBJECT,
    SetNamedSecurityInfoW,
};
use windows_sys::Win32::Security::{
    ACL, DACL_SECURITY_INFORMATION, GetSecurityDescriptorDacl, GetSecurityDescriptorOwner,
    OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
    UNPROTECTED_DACL_SECURITY_INFORMATION,
};

/// Full access for SYSTEM and Administrators only, inheritance cut.
const SECRET_DACL: &str = "D:P(A;;FA;;;SY)(A;;FA;;;BA)";

fn io(op: String) -> impl FnOnce(std::io::Error) -> HostError {
    move |e| HostError::io(op, e)
}

/// Writes `path` atomically from bytes or, streamed, from a local file.
pub fn replace_with(path: &str, contents: Contents<'_>, access: Access) -> HostResult<()> {
    let p = Path::new(path);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(io(format!("create {}", parent.display())))?;
    }
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = p.with_file_name(format!(".{name}.calicoctl-win.tmp"));
    let tmp_s = tmp.to_string_lossy().into_owned();
    let mut file = create_temporary(&tmp_s, access)?;
    let written = contents
        .write_into(&mut file)
        .and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(HostError::io(format!("write {tmp_s}"), e));
    }
    let renamed = match rename_shared(&tmp, p) {
        // A running image cannot be replaced but can be renamed: an upgrade run from the root
        // moves calicoctl-win.exe aside, deleted at the next reboot.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && is_running_image(p) => {
            move_running_image_aside(p)
                .and_then(|()| rename_shared(&tmp, p).map_err(io(format!("replace {path}"))))
        }
        other => other.map_err(io(format!("replace {path}"))),
    };
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// A rename blocked a moment by a Go reader is tried again (`sharing`); the running image not.
fn rename_shared(from: &Path, to: &Path) -> std::io::Result<()> {
    crate::host::sharing::retried(
        || rename_through(from, to),
        |e| crate::host::sharing::is_transient(e.raw_os_error()) && !is_running_image(to),
        &mut std::thread::sleep,
    )
}

/// Renames the flushed `from` over `to` on the disk before returning (`MoveFileExW` with
/// `MOVEFILE_WRITE_THROUGH`); a target another process has open falls back to std's POSIX
/// rename (rust-lang/rust `library/std/src/sys/fs/windows.rs`, `rename`), then flushed.
fn rename_through(from: &Path, to: &Path) -> std::io::Result<()> {
    use windows_sys::Win32::Storage::FileSystem::{
        MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH, MoveFileExW,
    };
    let (f, t) = (wide(&from.to_string_lossy()), wide(&to.to_string_lossy()));
    let flags = MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH;
    // SAFETY: both names are NUL-terminated UTF-16 that live across the call.
    if unsafe { MoveFileExW(f.as_ptr(), t.as_ptr(), flags) } != 0 {
        return Ok(());
    }
    std::fs::rename(from, to)?;
    if let Ok(renamed) = std::fs::OpenOptions::new().write(true).open(to) {
        let _ = renamed.sync_all();
    }
    Ok(())
}

/// Whether `path` is this process's own executable.
fn is_running_image(path: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    match (
        std::env::current_exe().ok().and_then(|e| canon(&e)),
        canon(path),
    ) {
        (Some(a), Some(b)) => a
            .to_string_lossy()
            .eq_ignore_ascii_case(&b.to_string_lossy()),
        _ => false,
    }
}

/// Renames the running image aside (`<path>.calicoctl-win-old-<pid>`), deleted at the next
/// reboot with its folder if empty (`MOVEFILE_DELAY_UNTIL_REBOOT`).
fn move_running_image_aside(path: &Path) -> HostResult<()> {
    use windows_sys::Win32::Storage::FileSystem::{MOVEFILE_DELAY_UNTIL_REBOOT, MoveFileExW};
    let aside = path.with_file_name(format!(
        "{}{}{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        crate::layout::RUNNING_IMAGE_ASIDE,
        std::process::id()
    ));
    std::fs::rename(path, &aside).map_err(io(format!(
        "move the running {} aside to {}",
        path.display(),
        aside.display()
    )))?;
    let later = |p: &Path| {
        let w = wide(&p.to_string_lossy());
        // SAFETY: w is NUL-terminated; a NULL target means delete at reboot.
        unsafe { MoveFileExW(w.as_ptr(), std::ptr::null(), MOVEFILE_DELAY_UNTIL_REBOOT) != 0 }
    };
    if !later(&aside) {
        return Err(HostError::io(
            format!("have Windows delete {} at the next reboot", aside.display()),
            std::io::Error::last_os_error(),
        ));
    }
    // The folder goes too if nothing else is in it then; a failure here changes nothing.
    if let Some(dir) = path.parent() {
        let _ = later(dir);
    }
    Ok(())
}

/// A new temporary file, never one that was there (removed, then `CREATE_NEW`), so no one
/// else's owner or DACL carries over. A secret's is made with its DACL and share mode 0 in the
/// one `CreateFileW` (Microsoft's CreateFileW documentation).
fn create_temporary(tmp: &str, access: Access) -> HostResult<std::fs::File> {
    use std::os::windows::io::FromRawHandle;
    use windows_sys::Win32::Foundation::{GENERIC_WRITE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::Security::SECURITY_ATTRIBUTES;
    use windows_sys::Win32::Storage::FileSystem::{CREATE_NEW, CreateFileW, FILE_ATTRIBUTE_NORMAL};
    match std::fs::remove_file(tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(HostError::io(format!("remove the old temporary {tmp}"), e)),
    }
    let sd = if access == Access::Secret {
        descriptor(SECRET_DACL).map_err(io(format!("make the access list of {tmp}")))?
    } else {
        std::ptr::null_mut()
    };
    let attributes = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: sd,
        bInheritHandle: 0,
    };
    let wpath = wide(tmp);
    // SAFETY: wpath is NUL-terminated; attributes (and the descriptor it points to) outlive
    // the call; a NULL template.
    let handle = unsafe {
        CreateFileW(
            wpath.as_ptr(),
            GENERIC_WRITE,
            0,
            if sd.is_null() {
                std::ptr::null()
            } else {
                &attributes
            },
            CREATE_NEW,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        )
    };
    let error = std::io::Error::last_os_error();
    if !sd.is_null() {
        // SAFETY: sd came from ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(sd) };
    }
    if handle == INVALID_HANDLE_VALUE {
        return Err(HostError::io(format!("create {tmp}"), error));
    }
    // SAFETY: a handle CreateFileW just opened, owned by the File from here on.
    Ok(unsafe { std::fs::File::from_raw_handle(handle) })
}

/// The security descriptor `sddl` says, for the caller to free with `LocalFree`.
fn descriptor(sddl: &str) -> std::io::Result<PSECURITY_DESCRIPTOR> {
    let wsddl = wide(sddl);
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: wsddl is NUL-terminated; sd is an out-pointer.
    let ok = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            wsddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(sd)
}

/// Whether an SDDL's DACL is the secret one by meaning: protected, full access for SYSTEM and
/// Administrators only (Windows adds its own control flags, so text is not compared).
fn is_secret_dacl(sddl: &str) -> bool {
    let (Ok(d), Ok(secret)) = (
        crate::host::acl::parse(sddl),
        crate::host::acl::parse(SECRET_DACL),
    ) else {
        return false;
    };
    d.protected && d.aces.len() == 2 && secret.aces.iter().all(|a| d.aces.contains(a))
}

pub fn access(path: &str) -> HostResult<Option<Access>> {
    if !Path::new(path).is_file() {
        return Ok(None);
    }
    Ok(sddl_of(path, false)?.map(|sddl| {
        if is_secret_dacl(&sddl) {
            Access::Secret
        } else {
            Access::Normal
        }
    }))
}

/// The owner and DACL of `path` in SDDL, read by handle (`GetSecurityInfo`); `itself` opens a
/// link's own (`FILE_FLAG_OPEN_REPARSE_POINT`: a planted junction is not read as its target).
/// `None` when nothing is there.
pub(super) fn sddl_of(path: &str, itself: bool) -> HostResult<Option<String>> {
    use std::os::windows::fs::OpenOptionsExt;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Security::Authorization::GetSecurityInfo;
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, READ_CONTROL,
    };
    let (flags, of) = if itself {
        (FILE_FLAG_OPEN_REPARSE_POINT, format!("{path} itself"))
    } else {
        (0, path.to_owned())
    };
    let opened = std::fs::OpenOptions::new()
        .access_mode(READ_CONTROL)
        .custom_flags(flags | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HostError::io(format!("open {of} to read its owner"), e)),
    };
    let what = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: the handle is open while `file` lives; sd is freed in `sddl_text`.
    let rc = unsafe {
        GetSecurityInfo(
            file.as_raw_handle(),
            SE_FILE_OBJECT,
            what,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut sd,
        )
    };
    if rc != 0 {
        return Err(HostError::io(
            format!("read the owner and access list of {of}"),
            std::io::Error::from_raw_os_error(rc as i32),
        ));
    }
    sddl_text(sd, what, path).map(Some)
}

/// The security descriptor `sd` (freed here) as SDDL, the parts `what` names.
fn sddl_text(sd: PSECURITY_DESCRIPTOR, what: u32, path: &str) -> HostResult<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: sd is valid; text is freed with LocalFree below.
    let ok = unsafe {
        ConvertSecurityDescriptorToStringSecurityDescriptorW(
            sd,
            SDDL_REVISION_1,
            what,
            &mut text,
            std::ptr::null_mut(),
        )
    };
    let error = std::io::Error::last_os_error();
    let sddl = (ok != 0).then(|| super::ffi::take_wide(text));
    // SAFETY: both came from the calls above and are not used after this.
    unsafe {
        LocalFree(sd);
        LocalFree(text.cast());
    }
    sddl.ok_or_else(|| HostError::io(format!("write the access list of {path} as SDDL"), error))
}

pub fn copy_file(from: &str, to: &str, access: Access) -> HostResult<bool> {
    if !Path::new(from).is_file() {
        return Ok(false);
    }
    replace_with(to, Contents::File(Path::new(from)), access)?;
    Ok(true)
}

pub fn remove(path: &str) -> HostResult<bool> {
    let _ = std::fs::remove_file(crate::files::temporary_of(Path::new(path)));
    let removed = crate::host::sharing::retried(
        || std::fs::remove_file(path),
        |e| {
            crate::host::sharing::is_transient(e.raw_os_error())
                && !is_running_image(Path::new(path))
        },
        &mut std::thread::sleep,
    );
    match removed {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        // Uninstall run from the root: its own running image cannot be deleted.
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                && is_running_image(Path::new(path)) =>
        {
            move_running_image_aside(Path::new(path))?;
            Ok(true)
        }
        Err(e) => Err(HostError::io(format!("remove {path}"), e)),
    }
}

pub fn remove_empty_dir(path: &str) -> HostResult<bool> {
    crate::files::remove_stale_temporaries(Path::new(path));
    match std::fs::read_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(HostError::io(format!("list {path}"), e)),
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Ok(false);
            }
            std::fs::remove_dir(path)
                .map(|()| true)
                .map_err(io(format!("remove directory {path}")))
        }
    }
}

/// Whether `path` itself is a reparse point (junction, mount point or symbolic link;
/// Microsoft's "Reparse Point Operations").
pub fn is_reparse_point(path: &str) -> HostResult<bool> {
    use std::os::windows::fs::MetadataExt;
    use windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_REPARSE_POINT;
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(m.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(HostError::io(format!("read the attributes of {path}"), e)),
    }
}

/// Whether the open `file` is a plain file with no other name: no directory, no reparse
/// point, one link (`nNumberOfLinks`, BY_HANDLE_FILE_INFORMATION).
pub fn is_sole_plain_file(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
        GetFileInformationByHandle,
    };
    let mut info: BY_HANDLE_FILE_INFORMATION = super::ffi::zeroed();
    // SAFETY: the handle is open for as long as `file` is borrowed; `info` is this frame's.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let odd = FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT;
    Ok(info.dwFileAttributes & odd == 0 && info.nNumberOfLinks == 1)
}

/// The existing regular file `path` opened to read and write in place (`Files::open_update`),
/// its last name not followed (`FILE_FLAG_OPEN_REPARSE_POINT`), where it led read from the
/// handle (`final_path_of`).
pub fn open_update(path: &str) -> HostResult<Option<crate::host::OpenedFile>> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
    if !Path::new(path).is_file() {
        return Ok(None);
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path);
    let file = match opened {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        r => r.map_err(io(format!("open {path} to write")))?,
    };
    let final_path = final_path_of(&file).map_err(io(format!("read where {path} was opened")))?;
    let sole_plain =
        is_sole_plain_file(&file).map_err(io(format!("read what {path} opened is")))?;
    Ok(Some(crate::host::OpenedFile {
        file,
        final_path,
        sole_plain,
    }))
}

/// Where `path` leads now (`Files::final_path`): std's `canonicalize`, which opens it and reads
/// `GetFinalPathNameByHandleW` (rust-lang/rust `library/std/src/sys/fs/windows.rs`,
/// `canonicalize`), or its directory's for a file not there yet; the `\\?\` prefix aside.
pub fn final_path(path: &str) -> HostResult<Option<String>> {
    crate::host::files::resolve_final(Path::new(path))
        .map(|p| p.map(|p| crate::host::files::without_verbatim(&p.to_string_lossy())))
        .map_err(io(format!("read where {path} leads")))
}

/// The final path of the open `file` (`GetFinalPathNameByHandleW`, `FILE_NAME_NORMALIZED |
/// VOLUME_NAME_DOS`), without the `\\?\` prefix.
pub fn final_path_of(file: &std::fs::File) -> std::io::Result<String> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_NAME_NORMALIZED, GetFinalPathNameByHandleW, VOLUME_NAME_DOS,
    };
    let mut buf = vec![0u16; 512];
    // Twice at most: the second time with the size the first said it needs.
    for _ in 0..2 {
        let cap = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: the handle is open while `file` is borrowed; `buf` holds `cap` u16s.
        let n = unsafe {
            GetFinalPathNameByHandleW(
                file.as_raw_handle(),
                buf.as_mut_ptr(),
                cap,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        };
        if n == 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n < cap {
            let name = String::from_utf16_lossy(&buf[..n as usize]);
            return Ok(crate::host::files::without_verbatim(&name));
        }
        buf.resize(n as usize, 0);
    }
    Err(std::io::Error::other(
        "GetFinalPathNameByHandleW asked for a larger buffer twice",
    ))
}

/// The owner and access list of `path` in SDDL; `None` when it does not exist.
pub fn security(path: &str) -> HostResult<Option<String>> {
    sddl_of(path, false)
}

pub fn create_dir(path: &str) -> HostResult<bool> {
    if Path::new(path).is_dir() {
        return Ok(false);
    }
    std::fs::create_dir_all(path)
        .map(|()| true)
        .map_err(|e| HostError::io(format!("create directory {path}"), e))
}

/// Sets the owner and the DACL of `sddl` on `path`, the DACL protected from inheritance.
pub fn set_security(path: &str, sddl: &str) -> HostResult<()> {
    let sd = descriptor(sddl).map_err(io(format!("read the access list {sddl}")))?;
    let (mut present, mut defaulted) = (0, 0);
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut owner: PSID = std::ptr::null_mut();
    // SAFETY: sd is a valid security descriptor; dacl and owner point into it.
    unsafe {
        GetSecurityDescriptorDacl(sd, &mut present, &mut dacl, &mut defaulted);
        GetSecurityDescriptorOwner(sd, &mut owner, &mut defaulted);
    }
    // Protected cuts inheritance; unprotected recomputes the inherited entries.
    let mut what = DACL_SECURITY_INFORMATION
        | if crate::host::acl::parse(sddl).is_ok_and(|d| d.protected) {
            PROTECTED_DACL_SECURITY_INFORMATION
        } else {
            UNPROTECTED_DACL_SECURITY_INFORMATION
        };
    if !owner.is_null() {
        what |= OWNER_SECURITY_INFORMATION;
    }
    let wpath = wide(path);
    let set = |what: u32| {
        // SAFETY: wpath is NUL-terminated; owner and dacl stay valid until sd is freed after.
        unsafe {
            SetNamedSecurityInfoW(
                wpath.as_ptr(),
                SE_FILE_OBJECT,
                what,
                owner,
                std::ptr::null_mut(),
                dacl,
                std::ptr::null(),
            )
        }
    };
    let mut rc = set(what);
    // An owner other than the caller or a group it may assign needs SeRestorePrivilege, which
    // an elevated administrator holds but disabled (Microsoft's SetNamedSecurityInfoW page:
    // ERROR_INVALID_OWNER otherwise): enabled for the call, then tried once more.
    if rc == ERROR_INVALID_OWNER && enable_restore_privilege() {
        rc = set(what);
    }
    let owner_refused = rc == ERROR_INVALID_OWNER;
    if owner_refused {
        // The DACL guards the directory: set, and the owner that could not be said.
        rc = set(what & !OWNER_SECURITY_INFORMATION);
    }
    // SAFETY: sd came from ConvertStringSecurityDescriptorToSecurityDescriptorW.
    unsafe { LocalFree(sd) };
    if rc != 0 {
        return Err(HostError::io(
            format!("set the owner and access list of {path}"),
            std::io::Error::from_raw_os_error(rc as i32),
        ));
    }
    if owner_refused {
        return Err(HostError::Refused {
            what: format!("give {path} its owner back"),
            reason: "its access list was set, but Windows refused the owner (ERROR_INVALID_OWNER, 1307) even with SeRestorePrivilege: 'icacls PATH /setowner OWNER' as an administrator sets it".into(),
        });
    }
    Ok(())
}

/// `ERROR_INVALID_OWNER`: the owner may not be assigned by this caller.
const ERROR_INVALID_OWNER: u32 = 1307;

/// Enables SeRestorePrivilege (in an elevated administrator's token); whether it is on now.
fn enable_restore_privilege() -> bool {
    use windows_sys::Win32::Foundation::{GetLastError, LUID};
    use windows_sys::Win32::Security::{
        AdjustTokenPrivileges, LUID_AND_ATTRIBUTES, LookupPrivilegeValueW, SE_PRIVILEGE_ENABLED,
        TOKEN_ADJUST_PRIVILEGES, TOKEN_PRIVILEGES, TOKEN_QUERY,
    };
    let name = wide("SeRestorePrivilege");
    let mut luid: LUID = super::ffi::zeroed();
    // SAFETY: name is NUL-terminated; luid is an out-pointer.
    if unsafe { LookupPrivilegeValueW(std::ptr::null(), name.as_ptr(), &mut luid) } == 0 {
        return false;
    }
    let privileges = TOKEN_PRIVILEGES {
        PrivilegeCount: 1,
        Privileges: [LUID_AND_ATTRIBUTES {
            Luid: luid,
            Attributes: SE_PRIVILEGE_ENABLED,
        }],
    };
    // AdjustTokenPrivileges succeeds without enabling a privilege the token lacks, and says
    // so in the last error (ERROR_NOT_ALL_ASSIGNED, 1300).
    // SAFETY: the token is opened with TOKEN_ADJUST_PRIVILEGES; privileges is a valid list;
    // GetLastError takes no arguments.
    let adjust = |token| unsafe {
        AdjustTokenPrivileges(
            token,
            0,
            &privileges,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        ) != 0
            && GetLastError() == 0
    };
    with_token(TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, adjust).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_dacl_is_recognised_by_meaning() {
        assert!(is_secret_dacl(SECRET_DACL));
        assert!(is_secret_dacl("D:PAI(A;;FA;;;BA)(A;;FA;;;SY)"));
        assert!(
            !is_secret_dacl("D:AI(A;;FA;;;SY)(A;;FA;;;BA)"),
            "not protected"
        );
        assert!(!is_secret_dacl(
            "D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;0x1200a9;;;WD)"
        ));
        // What Wine 8 reads back after the secret DACL was set: it keeps only mode bits.
        assert!(!is_secret_dacl(
            "D:(A;;FA;;;SY)(A;;FA;;;S-1-5-21-0-0-0-1000)(A;;0x1200a9;;;WD)"
        ));
        assert!(!is_secret_dacl(""));
    }

    /// A Go reader without `FILE_SHARE_DELETE` (golang/go `syscall_windows.go`) delays a
    /// replace, which is tried again; one that never lets go fails it, leaving no temporary.
    #[test]
    fn a_replace_waits_for_a_reader_without_share_delete() {
        use std::os::windows::fs::OpenOptionsExt;
        use windows_sys::Win32::Storage::FileSystem::{FILE_SHARE_READ, FILE_SHARE_WRITE};
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("10-calico.conf");
        let path_s = path.to_string_lossy().into_owned();
        std::fs::write(&path, b"old").expect("write");
        let go_open = || {
            std::fs::OpenOptions::new()
                .read(true)
                .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
                .open(&path)
                .expect("open as Go does")
        };
        let held = go_open();
        // Is a rename blocked at all here (Wine may not enforce it)? Then the retry matters.
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"x").expect("probe");
        let blocked = std::fs::rename(&probe, &path).is_err();
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            drop(held);
        });
        replace_with(&path_s, Contents::Bytes(b"new"), Access::Normal)
            .expect("replaced once the reader let go");
        reader.join().expect("reader");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        if blocked {
            let _held = go_open();
            let err = replace_with(&path_s, Contents::Bytes(b"newer"), Access::Normal)
                .expect_err("held for good");
            assert!(err.to_string().contains("replace"), "{err}");
            assert!(
                !crate::files::temporary_of(&path).exists(),
                "the temporary is removed"
            );
        }
    }
}
