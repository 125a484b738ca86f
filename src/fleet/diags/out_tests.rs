use super::*;

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
