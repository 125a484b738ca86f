//! The Calico for Windows release: where the zip comes from (a file or a URL), its download
//! (streamed to disk while hashed, resumable, through the configured proxy), its checksum, and
//! its safe extraction into a recognised layout.

mod disk;
mod download;
mod error;
mod extract;
mod stream;
pub mod version;
mod want;

pub use disk::{Disk, Local, Place, ReadOnly};
pub use download::{Progress, download};
pub use error::ReleaseError;
pub use extract::{Extracted, extract};
pub use version::{Binary, CalicoVersion, Features};
pub use want::{Source, Want, parse_sha256};

use std::collections::BTreeMap;
use std::path::Path;

/// The Calico version install uses when none is given.
pub const DEFAULT_CALICO_VERSION: &str = "3.31.0";

/// The largest total size an archive may expand to (the real zip expands to about 300 MB).
pub const EXTRACT_CAP: u64 = 2 << 30;

/// The official release asset for a version (`3.30.0` or `v3.30.0`).
pub fn official_url(version: &str) -> String {
    let v = version.trim_start_matches('v');
    format!(
        "https://github.com/projectcalico/calico/releases/download/v{v}/calico-windows-v{v}.zip"
    )
}

/// Refuses a download without a checksum unless `--insecure-skip-checksum` (every caller has
/// refused plain HTTP first: `refuse_plain_http`).
pub fn check_url(want: &Want, url: &str) -> Result<(), ReleaseError> {
    if want.sha256.is_none() && !want.skip_checksum {
        return Err(ReleaseError::NeedChecksum { url: url.into() });
    }
    Ok(())
}

/// Refuses a plain-HTTP URL without `--allow-http`: a check of the URL alone, which a dry run
/// makes as the real run does.
pub fn refuse_plain_http(want: &Want) -> Result<(), ReleaseError> {
    match &want.source {
        Source::Url(url) if url.to_ascii_lowercase().starts_with("http://") && !want.allow_http => {
            Err(ReleaseError::PlainHttp { url: url.clone() })
        }
        _ => Ok(()),
    }
}

/// A download's checks before a real run changes anything (`check_url`), the checksum a
/// `SHA256SUMS` beside the zip publishes taken into `want` when none was given; a zip given as
/// a file has none.
pub fn check_download(want: &mut Want, env: &BTreeMap<String, String>) -> Result<(), ReleaseError> {
    refuse_plain_http(want)?;
    let Source::Url(url) = &want.source else {
        return Ok(());
    };
    let url = url.clone();
    if want.sha256.is_none() && !want.skip_checksum {
        want.sha256 = download::published_checksum(&url, &want.source.file_name(), want, env);
    }
    check_url(want, &url)
}

/// The zip to use, extracted into `staging` (an empty directory): the given file (checked
/// against `--sha256`), or the download, kept as `<cache>\<name>` (reused only with the asked
/// checksum), extracted while it arrives (`stream`); it counts once the checksum matched. A
/// cached or downloaded zip that cannot be extracted is removed.
pub fn obtain(
    want: &Want,
    cache: Place<'_>,
    staging: Place<'_>,
    env: &BTreeMap<String, String>,
    progress: &mut dyn Progress,
) -> Result<(Obtained, Extracted), ReleaseError> {
    let url = match &want.source {
        Source::Path(p) => return obtain_file(want, p, staging),
        Source::Url(url) => url,
    };
    let mut want = want.clone();
    check_download(&mut want, env)?;
    let want = &want;
    let dest = cache.join(&want.source.file_name());
    let zip = Place::new(cache.disk, &dest);
    let refused = |e| {
        let _ = cache.disk.remove_file(&dest);
        e
    };
    let obtained = |sha256, downloaded, extracted_again| Obtained {
        path: dest.clone(),
        sha256,
        downloaded,
        cached: Some(dest.clone()),
        extracted_again,
    };
    if let Some(expected) = &want.sha256
        && cache.disk.is_file(&dest).unwrap_or(false)
    {
        let (sha256, x) = hash_and_extract(zip, staging);
        if sha256.ok().as_ref() == Some(expected) {
            return Ok((obtained(expected.clone(), false, None), x.map_err(refused)?));
        }
        // Another zip under that name: downloaded again.
        stream::clear(staging)?;
    }
    cache
        .disk
        .create_dir(cache.path)
        .map_err(|e| ReleaseError::io(format!("cannot create {}", cache.path), e))?;
    let (sha256, x, again) = download_and_extract(url, zip, staging, want, env, progress)?;
    Ok((obtained(sha256, true, again), x.map_err(refused)?))
}

/// A release zip given as a file: hashed and extracted in one read, checked against the
/// checksum asked for.
fn obtain_file(
    want: &Want,
    p: &Path,
    staging: Place<'_>,
) -> Result<(Obtained, Extracted), ReleaseError> {
    // A pipe or a device would block or never end.
    if !p.is_file() {
        return Err(ReleaseError::NotAFile {
            what: p.display().to_string(),
        });
    }
    let name = Local::name(p).map_err(|e| ReleaseError::io("cannot read the release zip", e))?;
    let (sha256, x) = hash_and_extract(Place::new(&Local, &name), staging);
    let sha256 = sha256?;
    if let Some(expected) = &want.sha256
        && *expected != sha256
    {
        return Err(ReleaseError::Checksum {
            what: p.display().to_string(),
            expected: expected.clone(),
            actual: sha256,
        });
    }
    let obtained = Obtained {
        path: name,
        sha256,
        downloaded: false,
        cached: None,
        extracted_again: None,
    };
    Ok((obtained, x?))
}

/// A downloaded zip's sha256, its extraction (refused, the caller removes the zip) and why the
/// extraction that followed the download was done again from the finished zip.
type Downloaded = (String, Result<Extracted, ReleaseError>, Option<String>);

/// Downloads the zip to `dest` while a follower extracts what has arrived (the extraction
/// confirmed against the finished zip, or done again from it).
fn download_and_extract(
    url: &str,
    dest: Place<'_>,
    staging: Place<'_>,
    want: &Want,
    env: &BTreeMap<String, String>,
    progress: &mut dyn Progress,
) -> Result<Downloaded, ReleaseError> {
    let growth = stream::Growth::default();
    let (sha256, streamed) = std::thread::scope(|s| {
        let follower = s.spawn(|| stream::follow(&growth, staging, EXTRACT_CAP));
        let sha256 = download(
            url,
            dest.disk,
            dest.path,
            want,
            env,
            progress,
            Some(&growth),
        );
        let streamed = follower
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (sha256, streamed)
    });
    let sha256 = sha256?;
    let confirmed = streamed.and_then(|followed| {
        stream::confirm(dest, &followed, EXTRACT_CAP)?;
        Ok(followed)
    });
    let (x, extracted_again) = match confirmed {
        Ok(followed) => (
            extract::layout(staging, dest.path, &followed.versions),
            None,
        ),
        Err(stream::GaveUp(why)) => {
            stream::clear(staging)?;
            (extract(dest, staging, EXTRACT_CAP), Some(why))
        }
    };
    Ok((sha256, x, extracted_again))
}

/// Hashes `zip` on this thread while another extracts it into `staging`.
fn hash_and_extract(
    zip: Place<'_>,
    staging: Place<'_>,
) -> (
    Result<String, ReleaseError>,
    Result<Extracted, ReleaseError>,
) {
    std::thread::scope(|s| {
        let x = s.spawn(|| stream::extract_whole(zip, staging, EXTRACT_CAP));
        let sha256 = zip
            .open()
            .and_then(crate::files::sha256_read)
            .map_err(|e| ReleaseError::io(format!("cannot read {}", zip.path), e));
        let x = x.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (sha256, x)
    })
}

/// The zip: given on this machine, or in the cache.
#[derive(Clone, Debug)]
pub struct Obtained {
    pub path: String,
    pub sha256: String,
    pub downloaded: bool,
    /// Set when the zip lives in the cache (the install owns that file).
    pub cached: Option<String>,
    /// Why the extraction that followed the download was not used and the finished zip was
    /// extracted again (an entry whose sizes follow its data, say).
    pub extracted_again: Option<String>,
}

impl Want {
    /// Without a chosen version, installs the cluster's Calico (ClusterInformation's
    /// `calicoVersion`) instead of the built-in default.
    pub fn follow_cluster(&mut self, cluster: Option<&str>) {
        if self.chosen {
            return;
        }
        if let Some(v) = cluster.and_then(|c| CalicoVersion::parse(c).ok()) {
            let v = v.to_string();
            self.source = Source::Url(official_url(&v));
            self.version = Some(v);
        }
    }
}

/// Compares a release's version with the cluster's: a different one is a warning (returned),
/// an older one a refused downgrade unless allowed. Unreadable versions are not compared.
pub fn against_cluster(
    what: &str,
    found: &str,
    cluster: Option<&str>,
    allow_downgrade: bool,
) -> Result<Option<String>, ReleaseError> {
    let (Ok(f), Some(Ok(c))) = (
        CalicoVersion::parse(found),
        cluster.map(CalicoVersion::parse),
    ) else {
        return Ok(None);
    };
    if (f.major, f.minor, f.patch) == (c.major, c.minor, c.patch) {
        return Ok(None);
    }
    if f < c && !allow_downgrade {
        return Err(ReleaseError::Downgrade {
            what: what.into(),
            found: f.to_string(),
            cluster: c.to_string(),
        });
    }
    let how = if f < c { "older" } else { "newer" };
    Ok(Some(format!(
        "{what} is Calico {f}, {how} than the cluster's Calico {c}: Windows nodes should run the cluster's version"
    )))
}

/// Checks the extracted release's version against `--calico-version`.
pub fn check_version(want: &Want, x: &Extracted, what: &str) -> Result<(), ReleaseError> {
    match (&want.version, &x.version) {
        (Some(asked), Some(found)) if asked.trim_start_matches('v') != found => {
            Err(ReleaseError::Version {
                what: what.into(),
                found: found.clone(),
                asked: asked.clone(),
            })
        }
        // A zip whose version cannot be read is accepted only when its checksum was checked.
        (Some(asked), None) if want.sha256.is_none() => Err(ReleaseError::Layout {
            what: what.into(),
            why: format!(
                "its version cannot be read (none in its Calico binary nor in its name), so it cannot be checked against {asked}; pass --sha256"
            ),
        }),
        _ => Ok(()),
    }
}

impl crate::error::Diagnose for ReleaseError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Exit, Kind};
        let (exit, kind) = match self {
            Self::Timeout { .. } => (Exit::Timeout, Kind::DownloadTimeout),
            Self::BadChecksumArg(_) | Self::NotAFile { .. } => (Exit::Usage, Kind::Usage),
            Self::BadUrl { .. } => (Exit::Usage, Kind::BadUrl),
            Self::NeedChecksum { .. } => (Exit::Usage, Kind::ChecksumNeeded),
            Self::PlainHttp { .. } => (Exit::Usage, Kind::PlainHttp),
            Self::Downgrade { .. } => (Exit::Usage, Kind::Downgrade),
            Self::Checksum { .. } => (Exit::Failed, Kind::ChecksumMismatch),
            Self::Version { .. } => (Exit::Failed, Kind::VersionMismatch),
            Self::Download { .. } | Self::Status { .. } => (Exit::Failed, Kind::DownloadFailed),
            Self::Zip { .. }
            | Self::Unsafe { .. }
            | Self::TooLarge { .. }
            | Self::Layout { .. } => (Exit::Failed, Kind::BadRelease),
            Self::Io { .. } => (Exit::Failed, Kind::Failed),
        };
        Some(crate::error::Diagnosis {
            exit,
            kind,
            hint: self.hint().map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests;
