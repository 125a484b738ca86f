//! The directories whose files run as SYSTEM, and what protects them: install's access list
//! (SYSTEM and Administrators only, docs/security.md), and no junction or other reparse point on
//! the way to them. `preflight` and `status` judge them, install and reconfigure refuse what is
//! not so before they change anything, and the executor looks again at each write.

use crate::config::Config;
use crate::host::Host;

/// The directories install protects, the install root first: the CNI bin and conf
/// directories and the logs directory too, when install makes them or someone else may change
/// them.
pub fn protected_dirs(c: &Config) -> Vec<String> {
    let mut dirs = vec![
        c.install_root.as_str().to_owned(),
        c.logs.dir.as_str().to_owned(),
    ];
    // Without a CNI backend install puts no plugin there.
    if c.backend != crate::config::types::Backend::None {
        dirs.push(c.cni.bin_dir.as_str().to_owned());
        dirs.push(c.cni.conf_dir.as_str().to_owned());
    }
    let mut dirs: Vec<String> = dirs
        .into_iter()
        .map(|d| d.trim_end_matches(['\\', '/']).to_owned())
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    dirs.retain(|d| seen.insert(d.to_ascii_lowercase()));
    dirs
}

/// The directories whose files run as SYSTEM, as configured: those install protects, and
/// kube-proxy's (`kube_proxy.path`), which it does not make.
pub fn system_dirs(c: &Config) -> Vec<String> {
    let mut dirs = protected_dirs(c);
    if let Some(kp) = &c.kube_proxy.path
        && let Some((dir, _)) = kp.as_str().rsplit_once(['\\', '/'])
        && !dirs.iter().any(|d| d.eq_ignore_ascii_case(dir))
    {
        dirs.push(dir.to_owned());
    }
    dirs
}

/// Each existing directory of `system_dirs` that someone other than SYSTEM and
/// Administrators may change, with who; an unreadable one with why.
pub fn weak_dirs(h: &dyn Host, c: &Config) -> Vec<(String, Vec<String>)> {
    let admin = elevated_user(h);
    let mut out = Vec::new();
    for d in system_dirs(c) {
        let found = writers(h.security(&d), admin.as_deref());
        if !found.is_empty() {
            out.push((d, found));
        }
    }
    out
}

/// Who but SYSTEM and Administrators (and `admin`, this elevated process's account) may
/// change what has the security `read` (`Files::security`, `Files::link_security`); nothing
/// when it is not there; an unreadable one with why.
pub fn writers(read: crate::host::HostResult<Option<String>>, admin: Option<&str>) -> Vec<String> {
    judged(read, |desc| crate::host::acl::writers_but(desc, admin))
}

/// What `judge` finds in the security `read`: nothing when it is not there; an unreadable one
/// with why.
fn judged(
    read: crate::host::HostResult<Option<String>>,
    judge: impl Fn(&crate::host::acl::Descriptor) -> Vec<String>,
) -> Vec<String> {
    match read {
        Ok(None) => Vec::new(),
        Ok(Some(sddl)) => match crate::host::acl::parse(&sddl) {
            Ok(desc) => judge(&desc),
            Err(why) => vec![format!("its access list cannot be read ({why}): {sddl}")],
        },
        Err(e) => vec![format!("its access list cannot be read: {e}")],
    }
}

/// Who but SYSTEM and Administrators (and `admin`) may change the file at `path`, as
/// `weak_dirs` judges a directory: a file a SYSTEM process reads to decide what it does.
pub fn file_writers(h: &dyn Host, path: &str, admin: Option<&str>) -> Vec<String> {
    writers(h.security(path), admin)
}

/// The first reparse point on the way to the file at `path` (each directory below the drive,
/// then the file) that someone but SYSTEM and Administrators owns or may change, with who: a
/// link's target is changed by anyone its list grants write (MS-FSA 2.1.5.10.37,
/// FSCTL_SET_REPARSE_POINT). One whose kind or security cannot be read counts as one. A link
/// others may write is followed only inside `sandbox` (`CONTAINER_SANDBOX_MOUNT_POINT`: hcsshim
/// mounts it at `C:\C\<id>` or `C:\hpc\<id>` with the drive root's list, and it holds the
/// program and its config). Judged by the link's own security (`Files::link_security`), told a
/// reparse point by `Files::is_reparse_point` (FILE_ATTRIBUTE_REPARSE_POINT, not followed).
pub fn untrusted_link(
    h: &dyn Host,
    path: &str,
    admin: Option<&str>,
    sandbox: Option<&str>,
) -> Option<(String, String)> {
    let path = path.replace('/', "\\");
    // `inner` below `outer` (`C:\a\b` below `C:\a`), case aside.
    let below = |inner: &str, outer: &str| {
        let (inner, outer) = (inner.to_ascii_lowercase(), outer.to_ascii_lowercase());
        inner
            .strip_prefix(outer.trim_end_matches('\\'))
            .is_some_and(|rest| rest.starts_with('\\'))
    };
    // The sandbox itself, a link above it (its volume mount point) or one in it (hcsshim's
    // links to the volumes, through which the program's config is read too). A drive's root
    // is no sandbox.
    let sandbox = sandbox
        .map(|s| s.trim_end_matches('\\'))
        .filter(|s| s.contains('\\'));
    let through = |at: &str| {
        sandbox.is_some_and(|s| s.eq_ignore_ascii_case(at) || below(s, at) || below(at, s))
    };
    for at in ancestors(&path) {
        let who = match h.is_reparse_point(&at) {
            Ok(false) => continue,
            // Who but SYSTEM, Administrators and `admin` owns it or, outside the sandbox, may change it.
            Ok(true) if through(&at) => judged(h.link_security(&at), |desc| {
                crate::host::acl::owner_but(desc, admin)
                    .into_iter()
                    .collect()
            }),
            Ok(true) => writers(h.link_security(&at), admin),
            Err(e) => vec![format!("whether it is one cannot be read: {e}")],
        };
        if !who.is_empty() {
            return Some((at, who.join("; ")));
        }
    }
    None
}

/// The account this process runs as, when it runs elevated: an administrator, so an owner or
/// entry of its own is not someone else's (under Wine every file is the Wine user's).
pub fn elevated_user(h: &dyn Host) -> Option<String> {
    h.system_facts()
        .ok()
        .filter(|f| f.elevated)
        .and_then(|f| f.user_sid)
}

/// What protects a directory as install does, by hand (elevated PowerShell).
pub fn protect_command(dir: &str) -> String {
    format!(
        "icacls \"{dir}\" /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F *S-1-5-32-545:(OI)(CI)RX; icacls \"{dir}\" /setowner *S-1-5-32-544"
    )
}

/// Each directory on the way to a directory whose files run as SYSTEM, from the drive down,
/// that is a reparse point (a junction): what is written there, and the access list set on
/// it, would go wherever it points.
pub fn reparse_points(h: &dyn Host, c: &Config) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in system_dirs(c) {
        for at in ancestors(&d) {
            if !out.iter().any(|o| o.eq_ignore_ascii_case(&at))
                && h.is_reparse_point(&at).unwrap_or(false)
            {
                out.push(at);
            }
        }
    }
    out
}

/// Refuses a junction on the way to a directory whose files run as SYSTEM, whatever checks
/// were skipped: install and reconfigure call it before they change anything.
pub fn refuse_reparse_points(h: &dyn Host, c: &Config) -> crate::host::HostResult<()> {
    match reparse_points(h, c).first() {
        None => Ok(()),
        Some(link) => Err(crate::host::HostError::Refused {
            what: format!("write under {link}"),
            reason: format!(
                "{link} is a junction or another reparse point: what is written there would go wherever it points (remove it and make a directory in its place: rmdir \"{link}\"; mkdir \"{link}\")"
            ),
        }),
    }
}

/// `C:\a\b\c` as `C:\a`, `C:\a\b`, `C:\a\b\c`: every directory below the drive.
pub fn ancestors(dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = String::new();
    for (i, part) in dir.split('\\').filter(|p| !p.is_empty()).enumerate() {
        if i > 0 {
            at.push('\\');
        }
        at.push_str(part);
        if i > 0 {
            out.push(at.clone());
        }
    }
    out
}

/// The first directory on the way to `dir` (itself included) that is a junction or another
/// reparse point; one whose kind cannot be read counts as one.
pub fn link_on_the_way(h: &dyn Host, dir: &str) -> Option<String> {
    ancestors(dir)
        .into_iter()
        .find(|a| h.is_reparse_point(a).unwrap_or(true))
}

// The simulated host's junctions are symbolic links, which only Unix gives it.
#[cfg(all(test, unix))]
#[path = "protection_tests.rs"]
mod tests;
