//! `fleet diags`' output directory: made, or taken when it is empty or holds only what a run
//! of `fleet diags` left there (one cut short by Ctrl-C or killed leaves its partial
//! `.NODE.zip.part` files, finished `NODE.zip` files and no index). What such a run left is
//! removed before the rerun gathers every node again: the directory then holds this run's
//! zips and index alone, and a node that fails now has no older zip beside its line. Anything
//! else in the directory refuses the run, naming it, before anything is removed.

use std::path::{Path, PathBuf};

/// The index's files (`diags_gather::write_index`).
const INDEX: [&str; 2] = ["index.json", "index.txt"];

/// An output directory that holds something not a run's own: nothing is gathered into it.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    #[error(
        "the output directory {0} is not empty: it holds {1}, which fleet diags does not write"
    )]
    NotEmpty(PathBuf, String),
    #[error(
        "the output directory {0} is not empty: it holds only .zip files, none of them shown to be fleet diags' by an index or a partial file beside them"
    )]
    ZipsAlone(PathBuf),
    #[error("cannot use the output directory {0}")]
    Io(PathBuf, #[source] std::io::Error),
}

/// What a name in the output directory is of a run's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Left {
    /// A node's bundle while it came (`.NODE.zip.part`), or the index's while written.
    Partial,
    /// A node's whole bundle, `NODE.zip`.
    Zip,
    /// `index.json`, `index.txt`.
    Index,
}

/// What a run of `fleet diags` writes under `name`, if it writes it.
fn left_by_a_run(name: &str) -> Option<Left> {
    let node_zip = |n: &str| {
        n.strip_suffix(".zip")
            .is_some_and(super::diags_fetch::is_file_name)
    };
    if let Some(part) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".part")) {
        return (node_zip(part) || INDEX.contains(&part)).then_some(Left::Partial);
    }
    match (node_zip(name), INDEX.contains(&name)) {
        (true, _) => Some(Left::Zip),
        (false, true) => Some(Left::Index),
        (false, false) => None,
    }
}

/// Makes `out`, or takes it when it exists and is empty or holds only a run's own files (all
/// of them removed then); refuses anything else, changing nothing. A directory of `.zip` files
/// alone is refused too: only an index or a partial file shows them a run's, not another
/// program's.
pub fn prepare_out(out: &Path) -> Result<(), OutError> {
    let io = |e| OutError::Io(out.to_owned(), e);
    let entries = match fs_err::read_dir(out) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return fs_err::create_dir_all(out).map_err(io);
        }
        Err(e) => return Err(io(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // A run writes plain files only: a directory or a link of one of its names is not one.
        found.push((name, entry.file_type().map_err(io)?.is_file()));
    }
    // In name order, so that the entry a refusal names is the same at every try.
    found.sort();
    let mut ours = Vec::new();
    for (name, file) in found {
        match left_by_a_run(&name).filter(|_| file) {
            Some(left) => ours.push((name, left)),
            None => return Err(OutError::NotEmpty(out.to_owned(), name)),
        }
    }
    if !ours.is_empty() && ours.iter().all(|(_, left)| *left == Left::Zip) {
        return Err(OutError::ZipsAlone(out.to_owned()));
    }
    for (name, _) in ours {
        fs_err::remove_file(out.join(name)).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_names_are_told_from_others() {
        assert!(left_by_a_run(".win-a.zip.part") == Some(Left::Partial));
        assert!(left_by_a_run(".index.json.part") == Some(Left::Partial));
        assert!(left_by_a_run("win-a.example.com.zip") == Some(Left::Zip));
        assert!(left_by_a_run("index.txt") == Some(Left::Index));
        for other in [
            "notes.txt",
            "Win-A.zip",
            ".zip.part",
            "..zip.part",
            "a.zip.bak",
            ".x.part",
            "index.json.part",
        ] {
            assert!(left_by_a_run(other).is_none(), "{other}");
        }
    }
}
