//! The size and modification time each installed file had when it hashed to its install
//! record's SHA-256, kept beside the record after every install and reconfigure: `status`
//! hashes only a file whose size or time differs (the quick check of git's index and rsync);
//! `status --verify` hashes every file. A cache, never the authority: an entry counts only for
//! the hash it was taken with; a missing, unreadable or foreign stats file means hashing all.
//! Not in the record itself: the record is planned before anything is written.

use super::record::InstallRecord;
use crate::host::{Access, Host};
use serde::{Deserialize, Serialize};

/// The format version; a file of another is not used.
const FORMAT: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct FileStats {
    format: u32,
    files: Vec<FileStat>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct FileStat {
    path: String,
    /// The contents' hash when the size and time were read: the record's then.
    sha256: String,
    size: u64,
    /// Nanoseconds since 1970 (NTFS keeps 100 ns ticks).
    modified: u128,
}

impl FileStats {
    /// The stats kept under `root`; none (everything is hashed) when there are none, or they
    /// cannot be read or are of another format.
    pub fn read(host: &dyn Host, root: &crate::layout::InstallRoot) -> Self {
        let path = root.file_stats();
        host.read_file(&path)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Self>(&bytes).ok())
            .filter(|s| s.format == FORMAT)
            .unwrap_or_default()
    }

    /// Whether the file at `path`, recorded with `sha256`, has the size and modification time
    /// it had when its contents hashed to `sha256`: it need not be hashed again.
    pub fn unchanged(&self, host: &dyn Host, path: &str, sha256: &str) -> anyhow::Result<bool> {
        let Some(kept) = self
            .files
            .iter()
            .find(|f| f.path.eq_ignore_ascii_case(path))
        else {
            return Ok(false);
        };
        if sha256.is_empty() || kept.sha256 != sha256 || kept.modified == 0 {
            return Ok(false);
        }
        Ok(host.stat(path)? == Some((kept.size, kept.modified)))
    }

    /// After an install or reconfigure: the recorded files' sizes and times now, each taken
    /// with the record's hash only when the file holds it: an entry whose size and time are
    /// unchanged carries over, any other file is hashed (and left out when it does not match,
    /// or changed while it was hashed). A file that drifted gets no entry, so status hashes it.
    pub fn write(host: &dyn Host, rec: &InstallRecord) -> anyhow::Result<()> {
        let before = Self::read(host, &rec.root());
        let mut files = Vec::with_capacity(rec.files.len());
        for f in rec.files.iter().filter(|f| !f.sha256.is_empty()) {
            let Some((size, modified)) = host.stat(&f.path)? else {
                continue;
            };
            let kept = FileStat {
                path: f.path.clone(),
                sha256: f.sha256.clone(),
                size,
                modified,
            };
            let matches = before.files.contains(&kept)
                || (host_sha256(host, &f.path)?.as_deref() == Some(f.sha256.as_str())
                    && host.stat(&f.path)? == Some((size, modified)));
            if matches {
                files.push(kept);
            }
        }
        let bytes = serde_json::to_vec_pretty(&Self {
            format: FORMAT,
            files,
        })?;
        let path = rec.root().file_stats();
        host.replace_file(&path, &bytes, Access::Normal)?;
        Ok(())
    }
}

/// The SHA-256 of a file on the host, streamed; `None` when it does not exist.
pub fn host_sha256(host: &dyn Host, path: &str) -> anyhow::Result<Option<String>> {
    anyhow::Context::with_context(host.sha256(path), || {
        format!("cannot read {path} to compare it with what install writes")
    })
}

/// A file that is not what it should be.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileDrift {
    pub path: String,
    pub state: FileState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileState {
    /// Install wrote it and it is gone.
    Missing,
    /// Its contents are not what install wrote.
    ChangedSinceInstall,
    /// What install rendered differs from what the config renders now.
    DiffersFromConfig,
}

impl FileDrift {
    /// The problem, for people.
    pub fn describe(&self) -> String {
        match self.state {
            FileState::Missing => format!("{} is missing", self.path),
            FileState::ChangedSinceInstall => format!("{} changed since install", self.path),
            FileState::DiffersFromConfig => {
                format!("{} differs from what the config renders", self.path)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::sha256_hex;
    use crate::host::Files;
    use crate::host::sim::SimHost;
    use crate::installed::record::RecordedFile;
    use crate::layout::InstallRoot;

    const ROOT: &str = r"C:\CalicoWindows";

    fn recorded(name: &str, contents: &[u8]) -> RecordedFile {
        RecordedFile {
            path: format!(r"{ROOT}\{name}"),
            sha256: sha256_hex(contents),
            rendered: false,
        }
    }

    #[test]
    fn an_entry_is_kept_only_for_a_file_that_holds_the_recorded_hash_and_only_for_it() {
        let host = SimHost::in_memory("ws2022").expect("host");
        host.create_dir(ROOT).expect("root");
        let (good, tampered) = (format!(r"{ROOT}\good.exe"), format!(r"{ROOT}\b.exe"));
        let write = |path: &str, text: &[u8]| {
            let put = host.write_file(path, text, Access::Normal);
            put.expect("write");
        };
        write(&good, b"good");
        write(&tampered, b"tampered");
        let rec = InstallRecord {
            install_root: ROOT.into(),
            files: vec![
                recorded("good.exe", b"good"),
                recorded("b.exe", b"original"),
            ],
            ..InstallRecord::default()
        };
        FileStats::write(&host, &rec).expect("keep");
        let stats = FileStats::read(&host, &InstallRoot::new(ROOT));
        let unchanged = |path: &str, contents: &[u8]| {
            stats
                .unchanged(&host, path, &sha256_hex(contents))
                .expect("stat")
        };
        assert!(unchanged(&good, b"good"));
        assert!(
            !unchanged(&tampered, b"original"),
            "a file that differs from the record gets no entry: status hashes it"
        );
        assert!(
            !unchanged(&good, b"other"),
            "an entry counts only for the hash it was taken with"
        );
        write(&good, b"good, longer");
        assert!(!unchanged(&good, b"good"), "the size changed");

        // A stats file of another format, or not JSON, is not used.
        let root = InstallRoot::new(ROOT);
        for other in [&br#"{"format": 2, "files": []}"#[..], b"not json"] {
            let put = host.replace_file(&root.file_stats(), other, Access::Normal);
            put.expect("write");
            assert!(FileStats::read(&host, &root).files.is_empty());
        }
    }
}
