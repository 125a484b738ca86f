//! Writing files atomically and only when their content changed.

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `path` already holds exactly `contents`.
pub fn unchanged(path: &Path, contents: &[u8]) -> bool {
    std::fs::read(path).is_ok_and(|old| old == contents)
}

/// Writes `contents` to `path` through a temporary file in the same directory and a rename,
/// so a reader never sees half a file. Returns whether the file changed.
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<bool> {
    if unchanged(path, contents) {
        return Ok(false);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.calicoctl-win.tmp"));
    fs_err::write(&tmp, contents)?;
    fs_err::rename(&tmp, path)
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(true)
}
