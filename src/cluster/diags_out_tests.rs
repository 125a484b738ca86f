use super::*;

#[test]
fn a_runs_names_are_told_from_others() {
    assert!(left_by_a_run(".win-a.zip.part") == Some(Left::Partial));
    assert!(left_by_a_run(".index.json.part") == Some(Left::Partial));
    assert!(left_by_a_run("win-a.example.com.zip") == Some(Left::Zip));
    assert!(left_by_a_run("index.txt") == Some(Left::Index));
    assert!(left_by_a_run(LOCK) == Some(Left::Lock));
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

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, body) in files {
        fs_err::write(dir.join(name), body).expect("write");
    }
}

const INDEX_OF_A: &str = r#"{"nodes":[{"node":"win-a","result":"ok","file":"win-a.zip","size":1,"sha256":"00"},{"node":"win-b","result":"failed","reason":"timed-out","message":"m"}],"gathered":1,"failed":1,"run_timed_out":false}"#;

/// A zip that no index.json lists, or an index.txt alone, is not shown to be ours: refused,
/// naming the first such entry, with nothing removed (not even the partial files).
#[test]
fn a_directory_with_an_unlisted_zip_is_refused_with_nothing_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = [
        ("index.txt", "a summary"),
        ("logs.zip", "a zip"),
        (".win-a.zip.part", "half"),
    ];
    write(dir.path(), &files);
    let before = names(dir.path());
    let err = prepare_out(dir.path()).expect_err("refused");
    assert!(
        matches!(&err, OutError::NotOurs(_, n) if n == "index.txt"),
        "{err}"
    );
    assert_eq!(names(dir.path()), before, "a refusal changes nothing");

    // With our index beside them, the zip it does not list is still refused.
    write(
        dir.path(),
        &[("index.json", INDEX_OF_A), ("win-a.zip", "old")],
    );
    let before = names(dir.path());
    let err = prepare_out(dir.path()).expect_err("refused");
    assert!(
        matches!(&err, OutError::NotOurs(_, n) if n == "logs.zip"),
        "{err}"
    );
    assert_eq!(names(dir.path()), before);

    // An index.json that is not ours is no index.
    fs_err::remove_file(dir.path().join("logs.zip")).expect("rm");
    write(dir.path(), &[("index.json", r#"{"nodes":[]}"#)]);
    let err = prepare_out(dir.path()).expect_err("refused");
    assert!(matches!(err, OutError::BadIndex(..)), "{err}");
    assert!(dir.path().join(".win-a.zip.part").exists());
}

/// A first run cut short leaves only partial files: taken, and they are removed.
#[test]
fn a_directory_of_partial_files_alone_is_taken() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        &[(".win-a.zip.part", "half"), (".index.json.part", "{")],
    );
    let taken = prepare_out(dir.path()).expect("taken");
    assert_eq!(taken.earlier_zips().count(), 0);
    assert_eq!(names(dir.path()), [LOCK]);
}

/// An earlier run's zips and index stay when a run takes the directory: only the partial
/// files go; the zips its index lists are known, to be removed once this run finished.
#[test]
fn an_earlier_runs_zips_and_index_stay_when_taken() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        &[
            ("index.json", INDEX_OF_A),
            ("index.txt", "a summary"),
            ("win-a.zip", "old"),
            (".win-b.zip.part", "half"),
        ],
    );
    let taken = prepare_out(dir.path()).expect("taken");
    assert_eq!(taken.earlier_zips().collect::<Vec<_>>(), ["win-a.zip"]);
    assert_eq!(
        names(dir.path()),
        [LOCK, "index.json", "index.txt", "win-a.zip"]
    );
}

/// Two runs into one directory: the second is refused while the first holds the lock, and
/// takes it once the first ended (the lock file left behind is no obstacle).
#[test]
fn a_second_run_into_a_locked_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = prepare_out(dir.path()).expect("taken");
    let err = prepare_out(dir.path()).expect_err("locked");
    assert!(matches!(err, OutError::Locked(..)), "{err}");
    // The first run's zip, renamed into place before its index lists it: still the lock.
    fs_err::write(dir.path().join("win-a.zip"), "new").expect("zip");
    let err = prepare_out(dir.path()).expect_err("locked");
    assert!(matches!(err, OutError::Locked(..)), "{err}");
    drop(first);
    // The lock file left, held by none: the zip no index lists is refused as not ours.
    let err = prepare_out(dir.path()).expect_err("not ours");
    assert!(
        matches!(&err, OutError::NotOurs(_, n) if n == "win-a.zip"),
        "{err}"
    );
    fs_err::remove_file(dir.path().join("win-a.zip")).expect("removed");
    prepare_out(dir.path()).expect("taken once the first ended");
    // A link of the lock's name is not ours: refused, not followed.
    #[cfg(unix)]
    {
        let other = tempfile::tempdir().expect("tempdir");
        let target = other.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, other.path().join(LOCK)).expect("link");
        let err = prepare_out(other.path()).expect_err("a link");
        assert!(
            matches!(&err, OutError::NotOurs(_, n) if n == LOCK),
            "{err}"
        );
        assert!(!target.exists(), "nothing made through the link");
    }
}

/// An `index.json` longer than a run writes is refused unread past its cap, nothing changed.
#[test]
fn an_index_past_its_cap_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = vec![b' '; usize::try_from(INDEX_CAP).expect("fits") + 1];
    fs_err::write(dir.path().join("index.json"), big).expect("index");
    let err = prepare_out(dir.path()).expect_err("too long");
    assert!(matches!(err, OutError::Io(..)), "{err}");
    assert!(!dir.path().join(LOCK).exists(), "nothing made");
}
