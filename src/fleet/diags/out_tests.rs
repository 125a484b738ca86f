use super::*;

/// A directory that holds anything is refused, naming what it holds, and left as it was.
#[test]
fn a_directory_that_holds_anything_is_refused_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    fs_err::create_dir(&out).expect("dir");
    fs_err::write(out.join("win-a.zip"), "an earlier run's").expect("zip");
    let refused = prepare_out(&out).expect_err("refused");
    assert!(refused.to_string().contains("holds win-a.zip"), "{refused}");
    let names: Vec<_> = fs_err::read_dir(&out)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["win-a.zip"]);
}

/// A new directory is made with its parents, an empty one is taken; a second run into either
/// while the first has it is refused (the first's claim); a run given back removes only what
/// it made.
#[test]
fn one_run_takes_a_new_or_empty_directory_and_a_second_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let new = dir.path().join("a/b");
    let empty = dir.path().join("empty");
    fs_err::create_dir(&empty).expect("dir");
    for out in [&new, &empty] {
        let taken = prepare_out(out).expect("taken");
        let second = prepare_out(out).expect_err("a second run is refused");
        assert!(matches!(second, OutError::NotEmpty(..)), "{second}");
        taken.abandon();
    }
    assert!(!new.exists(), "the directory it made stays");
    assert!(empty.is_dir(), "the directory it was given went");
    assert_eq!(fs_err::read_dir(&empty).expect("dir").count(), 0);
}
