//! Safe extraction: every entry is checked before anything is written (no path escaping the
//! target, no symlinks, a cap on the expanded size), then the layout is recognised.

use super::disk::Place;
use super::error::ReleaseError;
use super::version::{Binary, CalicoVersion, VersionScan};
use std::fs::File;
use std::io::{Read, Write};

/// An extracted release, staged on a disk (`on_node`: the node's, else this machine's).
#[derive(Clone, Debug)]
pub struct Extracted {
    /// The `CalicoWindows` directory.
    pub root: String,
    pub on_node: bool,
    pub binary: Binary,
    /// The Calico binary itself.
    pub binary_file: String,
    /// Without a leading `v`; `None` when neither the binary nor the zip's name tell.
    pub version: Option<String>,
    /// The CNI plugins under `cni/`: file name and staged path.
    pub cni: Vec<(String, String)>,
    /// confd's files (`confd/conf.d/*`, `confd/templates/*`): path relative to the root
    /// (backslash-separated) and staged path.
    pub confd: Vec<(String, String)>,
    /// The release's own `cni.conf.template` (for its `cniVersion`), when it is UTF-8 text
    /// of at most 16 MiB.
    pub cni_template: Option<String>,
}

/// Path components of an entry name, or why it is refused.
pub(super) fn components(name: &str) -> Result<Vec<&str>, &'static str> {
    if name.starts_with(['/', '\\']) || name.contains(':') {
        return Err("is an absolute path or names a drive or stream");
    }
    let parts: Vec<&str> = name
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err("escapes the target directory");
    }
    if parts.is_empty() {
        return Err("has an empty name");
    }
    Ok(parts)
}

/// The entry count the archive's end-of-central-directory record states (`None` for a zip64
/// archive, whose record says 0xFFFF, or when the record cannot be found).
fn listed_entries(mut f: &File) -> std::io::Result<Option<u64>> {
    use std::io::{Seek, SeekFrom};
    let len = f.metadata()?.len();
    // The record (22 bytes) ends the file, after a comment of at most 65535 bytes.
    let tail = len.min(22 + 65_535);
    f.seek(SeekFrom::Start(len - tail))?;
    let mut buf = Vec::with_capacity(tail as usize);
    f.take(tail).read_to_end(&mut buf)?;
    let Some(at) = buf.windows(4).rposition(|w| w == [0x50, 0x4b, 0x05, 0x06]) else {
        return Ok(None);
    };
    let Some(count) = buf.get(at + 10..at + 12) else {
        return Ok(None);
    };
    let n = u16::from_le_bytes([count[0], count[1]]);
    Ok((n != 0xFFFF).then_some(u64::from(n)))
}

/// The path as Windows resolves it: components compared without case, with the trailing dots
/// and spaces Windows strips removed; a NUL, a component Windows reduces to nothing, or a
/// device name (CON, NUL, COM1, ...) is refused.
pub(super) fn windows_key(parts: &[&str]) -> Result<String, &'static str> {
    const DEVICES: &[&str] = &[
        "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
        "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
    ];
    let mut key = Vec::with_capacity(parts.len());
    for p in parts {
        if p.contains('\0') {
            return Err("holds a NUL character");
        }
        let stripped = p.trim_end_matches(['.', ' ']).to_lowercase();
        if stripped.is_empty() {
            return Err("has a name Windows reduces to nothing (only dots and spaces)");
        }
        let stem = stripped.split('.').next().unwrap_or_default();
        if DEVICES.contains(&stem) {
            return Err("names a Windows device (CON, NUL, COM1 ...)");
        }
        if is_short_name(&stripped) {
            return Err(
                "is an 8.3 short name (CALICO~1.EXE), which on NTFS can name another entry (as in git's CVE-2019-1353)",
            );
        }
        key.push(stripped);
    }
    Ok(key.join("\\"))
}

/// Whether a name has the shape of an 8.3 short name: `~` and digits at the end of the part
/// before the extension (`calico~1.exe`, `progra~12`). NTFS gives such names to long ones, so
/// the entry could be another entry under its second name.
fn is_short_name(name: &str) -> bool {
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    stem.rsplit_once('~')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The files of an archive: size and CRC-32 by name in the archive.
pub type Listing = std::collections::BTreeMap<String, (u64, u32)>;

type Archive = zip::ZipArchive<std::io::BufReader<File>>;

/// The archive and the entry count its end record states.
fn open(zip: Place<'_>) -> Result<(Archive, Option<u64>), ReleaseError> {
    let what = zip.path.to_owned();
    let read = |e| ReleaseError::io(format!("cannot read {what}"), e);
    let file = zip.open().map_err(read)?;
    let listed = listed_entries(&file).map_err(read)?;
    let archive = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|source| ReleaseError::Zip { what, source })?;
    Ok((archive, listed))
}

/// Checks every entry of `zip` without writing anything: the files it holds (name in the
/// archive, size, CRC-32), or why it is refused.
pub(super) fn check(zip: Place<'_>, cap: u64) -> Result<Listing, ReleaseError> {
    let (mut archive, listed) = open(zip)?;
    check_archive(&mut archive, listed, zip.path, cap)
}

fn check_archive(
    archive: &mut Archive,
    listed: Option<u64>,
    what: &str,
    cap: u64,
) -> Result<Listing, ReleaseError> {
    let what = what.to_owned();
    let zerr = |source| ReleaseError::Zip {
        what: what.clone(),
        source,
    };
    // The zip crate keeps one entry per name; an archive that lists more entries than names
    // holds duplicates, and which one would count is the reader's choice.
    if let Some(listed) = listed
        && listed != archive.len() as u64
    {
        return Err(ReleaseError::Unsafe {
            what: what.clone(),
            entry: format!("{listed} entries, {} distinct names", archive.len()),
            why: "lists entries of one name more than once",
        });
    }

    let mut files = Listing::new();
    let mut declared = 0u64;
    let mut seen = std::collections::HashSet::new();
    for i in 0..archive.len() {
        let entry = archive.by_index_raw(i).map_err(zerr)?;
        let name = entry.name().map_err(zerr)?.into_owned();
        let unsafe_entry = |why| ReleaseError::Unsafe {
            what: what.clone(),
            entry: name.clone(),
            why,
        };
        let parts = components(&name).map_err(unsafe_entry)?;
        if entry.is_symlink() {
            return Err(unsafe_entry("is a symbolic link"));
        }
        // Two entries that are one file on Windows would let the second replace the first
        // after it was checked.
        let key = windows_key(&parts).map_err(unsafe_entry)?;
        if !entry.is_dir() {
            if !seen.insert(key) {
                return Err(unsafe_entry(
                    "names the same file on Windows as another entry (case, or trailing dots and spaces, which Windows ignores)",
                ));
            }
            files.insert(name.clone(), (entry.size(), entry.crc32()));
        }
        declared = declared.saturating_add(entry.size());
        if declared > cap {
            return Err(ReleaseError::TooLarge { what, cap });
        }
    }
    Ok(files)
}

/// Extracts `zip` into the new directory `into` and recognises the layout. Every entry is
/// checked before anything is written. On any error the caller removes `into` (a staging
/// directory).
pub fn extract(zip: Place<'_>, into: Place<'_>, cap: u64) -> Result<Extracted, ReleaseError> {
    let what = zip.path.to_owned();
    let zerr = |source| ReleaseError::Zip {
        what: what.clone(),
        source,
    };
    let (mut archive, listed) = open(zip)?;
    check_archive(&mut archive, listed, &what, cap)?;

    let mut written = 0u64;
    let mut versions = Versions::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(zerr)?;
        let name = entry.name().map_err(zerr)?.into_owned();
        let parts = components(&name).map_err(|why| ReleaseError::Unsafe {
            what: what.clone(),
            entry: name.clone(),
            why,
        })?;
        let target = target_of(into, &parts);
        let io = |e| ReleaseError::io(format!("cannot extract {name} from {what}"), e);
        if entry.is_dir() {
            into.disk.create_dir(&target).map_err(io)?;
            continue;
        }
        let mut out = into.disk.write(&target, false).map_err(io)?;
        let mut scan = is_calico_binary(&parts).then(VersionScan::default);
        // The declared sizes can lie: count what really comes out.
        let within_cap = |n: u64| {
            written += n;
            written <= cap
        };
        match copy_entry(&mut entry, &mut out, scan.as_mut(), within_cap) {
            Ok(_) => {}
            Err(Stop::Io(e)) => return Err(io(e)),
            Err(Stop::Cap) => return Err(ReleaseError::TooLarge { what, cap }),
        }
        if let Some(scan) = scan {
            versions.insert(target, scan.finish());
        }
    }
    layout(into, &what, &versions)
}

/// Where an entry of these path components goes in `into`.
pub(super) fn target_of(into: Place<'_>, parts: &[&str]) -> String {
    parts
        .iter()
        .fold(into.path.to_owned(), |p, c| into.disk.join(&p, c))
}

/// Versions read from the Calico binaries as they were written, by the path written.
pub(super) type Versions = std::collections::BTreeMap<String, Option<CalicoVersion>>;

/// Whether an entry is the release's Calico binary (`CalicoWindows/calico-node.exe` or
/// `CalicoWindows/calico.exe`), whose version is read while it is written.
pub(super) fn is_calico_binary(parts: &[&str]) -> bool {
    matches!(parts, ["CalicoWindows", "calico-node.exe" | "calico.exe"])
}

/// Why copying an entry stopped.
pub(super) enum Stop {
    Io(std::io::Error),
    /// `within_cap` said no.
    Cap,
}

/// Copies an entry out of the archive (reading it to its end checks its CRC-32), telling
/// `within_cap` every block's size and the scan every block's bytes: the size written.
pub(super) fn copy_entry(
    from: &mut impl Read,
    to: &mut impl Write,
    mut scan: Option<&mut VersionScan>,
    mut within_cap: impl FnMut(u64) -> bool,
) -> Result<u64, Stop> {
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = from.read(&mut buf).map_err(Stop::Io)?;
        if n == 0 {
            return Ok(size);
        }
        if !within_cap(n as u64) {
            return Err(Stop::Cap);
        }
        if let Some(scan) = scan.as_deref_mut() {
            scan.feed(&buf[..n]);
        }
        to.write_all(&buf[..n]).map_err(Stop::Io)?;
        size += n as u64;
    }
}

/// Recognises the extracted release in `into`; `versions` holds what the extraction read of
/// the Calico binary's version. `what` names the zip.
pub(super) fn layout(
    into: Place<'_>,
    what: &str,
    versions: &Versions,
) -> Result<Extracted, ReleaseError> {
    let bad = |why: String| ReleaseError::Layout {
        what: what.to_owned(),
        why,
    };
    let disk = into.disk;
    let read = |p: &str| {
        let p = p.to_owned();
        move |e| ReleaseError::io(format!("cannot read {p}"), e)
    };
    let root = into.join("CalicoWindows");
    if disk.list(&root).map_err(read(&root))?.is_none() {
        return Err(bad("there is no CalicoWindows folder at its top".into()));
    }
    let at = |name: &str| disk.join(&root, name);
    let is_file = |p: &str| disk.is_file(p).map_err(read(p));
    let binary = if is_file(&at("calico.exe"))? {
        Binary::Calico
    } else if is_file(&at("calico-node.exe"))? {
        Binary::CalicoNode
    } else {
        return Err(bad(
            "CalicoWindows holds neither calico.exe (v3.33+) nor calico-node.exe".into(),
        ));
    };
    let cni_dir = at("cni");
    if !is_file(&disk.join(&cni_dir, "calico.exe"))? {
        return Err(bad("CalicoWindows\\cni\\calico.exe is missing".into()));
    }
    let template = at("cni.conf.template");
    if !is_file(&template)? {
        return Err(bad("CalicoWindows\\cni.conf.template is missing".into()));
    }
    let mut cni = Vec::new();
    for name in ["calico.exe", "calico-ipam.exe"] {
        let p = disk.join(&cni_dir, name);
        if is_file(&p)? {
            cni.push((name.to_owned(), p));
        }
    }
    let mut confd = Vec::new();
    for sub in ["conf.d", "templates"] {
        let dir = disk.join(&at("confd"), sub);
        let entries = disk.list(&dir).map_err(read(&dir))?.unwrap_or_default();
        for (n, is_dir) in entries {
            let p = disk.join(&dir, &n);
            if !is_dir && is_file(&p)? {
                confd.push((format!("confd\\{sub}\\{n}"), p));
            }
        }
    }
    let exe = at(binary.file_name());
    let version = versions
        .get(&exe)
        .cloned()
        .flatten()
        .map(|v| v.to_string())
        .or_else(|| version_in_name(what));
    Ok(Extracted {
        binary_file: exe,
        cni_template: read_text(Place::new(disk, &template), crate::files::SMALL_FILE_CAP),
        root,
        on_node: disk.on_node(),
        binary,
        version,
        cni,
        confd,
    })
}

/// A small text file: `None` when it is missing, larger than `cap` or not UTF-8.
fn read_text(file: Place<'_>, cap: u64) -> Option<String> {
    let mut text = String::new();
    file.open()
        .ok()?
        .take(cap + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= cap).then_some(text)
}

/// The version in a zip's name like `calico-windows-v3.30.0.zip` (`what` is its path), when
/// the Go build information of its Calico binary (`buildinfo.Version=vX.Y.Z`, read as it was
/// extracted) gives none. Calico's zips hold no file naming their version (node/Makefile,
/// `WINDOWS_ARCHIVE_FILES`).
fn version_in_name(what: &str) -> Option<String> {
    let name = what.rsplit(['/', '\\']).next()?;
    let v = name
        .strip_prefix("calico-windows-v")?
        .strip_suffix(".zip")?;
    let looks = v
        .split('.')
        .take(3)
        .all(|p| p.chars().take_while(char::is_ascii_digit).next().is_some());
    looks.then(|| v.to_owned())
}
