//! `fleet diags`' output directory: each run writes a new one, as `oc adm must-gather` does.
//! `--out` is made, or taken when empty (else the run is refused, nothing changed), by making
//! `CLAIM` in it with `create_new`, which exactly one of two runs at once can do.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The file a run takes its directory by: its index while written, renamed to `index.json`
/// when the run ends (`diags::write_index`).
pub const CLAIM: &str = ".index.json.part";

/// An output directory a run does not take: nothing in it was changed.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    #[error(
        "the output directory {0} is not empty (it holds {1}): fleet diags writes each run into a new directory"
    )]
    NotEmpty(PathBuf, String),
    #[error("cannot use the output directory {0}")]
    Io(PathBuf, #[source] std::io::Error),
}

impl OutError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        "give --out a directory that does not exist yet, or an empty one".into()
    }
}

/// An output directory a run took.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    /// Whether this run made it.
    made: bool,
}

impl OutDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Gives the directory back after a run that wrote nothing in it: the claim removed, and
    /// the directory when this run made it.
    pub fn abandon(self) {
        let _ = fs_err::remove_file(self.dir.join(CLAIM));
        if self.made {
            let _ = fs_err::remove_dir(&self.dir);
        }
    }
}

/// Makes `out` (and its parents), or takes it when it exists and is empty; refuses anything
/// else, changing nothing.
pub fn prepare_out(out: &Path) -> Result<OutDir, OutError> {
    let io = |e| OutError::Io(out.to_owned(), e);
    let made = match fs_err::create_dir(out) {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
        Err(_) => {
            fs_err::create_dir_all(out).map_err(io)?;
            true
        }
    };
    if let Some(entry) = fs_err::read_dir(out).map_err(io)?.next() {
        let name = entry
            .map_err(io)?
            .file_name()
            .to_string_lossy()
            .into_owned();
        return Err(OutError::NotEmpty(out.to_owned(), name));
    }
    match fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out.join(CLAIM))
    {
        Ok(_) => Ok(OutDir {
            dir: out.to_owned(),
            made,
        }),
        // Another run took it between the look and the claim.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            Err(OutError::NotEmpty(out.to_owned(), CLAIM.into()))
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
#[path = "out_tests.rs"]
mod tests;
