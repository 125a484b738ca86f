use super::*;

fn position() -> Position {
    Position {
        head: crate::files::sha256_hex(b"felix 0\n"),
        head_len: 8,
        offset: 1234,
        at: -5,
        in_key: true,
        pending: crate::redact::Pending::Quote(34, 3),
    }
}

#[test]
fn a_record_is_read_back_and_a_torn_or_zero_one_is_refused() {
    let rec = record(&position()).expect("a record");
    assert_eq!(rec.len(), RECORD);
    assert_eq!(parse(&rec).expect("parsed"), position());
    // An older, longer document left after it (a kill before the cut) changes nothing.
    let mut longer = rec.clone();
    longer.extend_from_slice(b"\"offset\": 9}\n");
    assert_eq!(parse(&longer).expect("parsed"), position());
    // Zeros (a power loss before the data reached the disk), a torn or short record.
    assert!(parse(&[0u8; RECORD]).is_err());
    assert!(parse(b"").is_err());
    assert!(parse(&rec[..RECORD - 1]).is_err());
    let mut torn = rec.clone();
    torn[80..90].fill(0);
    assert!(parse(&torn).is_err());
    let mut changed = rec;
    changed[70] = b'9';
    assert!(parse(&changed).is_err());
}

#[test]
fn the_older_json_document_is_read() {
    let json = serde_json::to_vec(&position()).expect("json");
    assert_eq!(parse(&json).expect("parsed"), position());
}

#[test]
fn a_kept_file_is_overwritten_in_place_and_cut_to_one_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("felix.pos");
    fs_err::write(&path, vec![b'{'; 400]).expect("older");
    let mut kept = Kept::new(&path, None);
    let mut p = position();
    kept.save(&p).expect("saved");
    p.offset = 99_999;
    kept.save(&p).expect("saved");
    drop(kept);
    let bytes = fs_err::read(&path).expect("kept");
    assert_eq!(bytes.len(), RECORD);
    assert_eq!(parse(&bytes).expect("parsed"), p);
}

/// A position file is made writable by its owner only (0600, a secret file's mode on the
/// simulated host); one that others may change is not trusted and is made anew, protected, at
/// the first record kept.
#[cfg(unix)]
#[test]
fn a_position_file_is_protected_and_one_others_may_change_is_made_anew() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let mode = |p: &Path| fs_err::metadata(p).expect("meta").permissions().mode() & 0o777;
    let new = dir.path().join("new.pos");
    let mut kept = Kept::new(&new, None);
    kept.save(&position()).expect("saved");
    assert_eq!(mode(&new), 0o600);
    assert!(writers(&new, None).is_empty());

    let weak = dir.path().join("weak.pos");
    fs_err::write(&weak, record(&position()).expect("record")).expect("planted");
    fs_err::set_permissions(&weak, std::fs::Permissions::from_mode(0o666)).expect("mode");
    let said = writers(&weak, None);
    assert!(said.iter().any(|w| w.contains("mode 666")), "{said:?}");
    let mut p = position();
    p.offset = 7;
    let mut kept = Kept::new(&weak, None);
    kept.save(&p).expect("saved");
    drop(kept);
    assert_eq!(mode(&weak), 0o600);
    assert_eq!(
        parse(&fs_err::read(&weak).expect("kept")).expect("parsed"),
        p
    );
}

/// On Windows a new position file has the secret files' access list (SYSTEM and
/// Administrators only, protected), and one that Users may change is made anew with it. Under
/// Wine, whose Linux file system keeps no access lists (as `host::contract::files`), the
/// records are kept through the same calls, the access lists not judged.
#[cfg(windows)]
#[test]
fn a_position_file_is_protected_and_one_users_may_change_is_made_anew() {
    use crate::host::Access;
    use crate::host::windows::files::{access, set_security};
    let acls = std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none();
    let dir = tempfile::tempdir().expect("tempdir");
    let text = |p: &Path| p.to_string_lossy().into_owned();
    let new = dir.path().join("new.pos");
    Kept::new(&new, None).save(&position()).expect("saved");
    if acls {
        assert_eq!(access(&text(&new)).expect("access"), Some(Access::Secret));
    }

    let weak = dir.path().join("weak.pos");
    fs_err::write(&weak, record(&position()).expect("record")).expect("planted");
    set_security(&text(&weak), "O:BAD:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;BU)").expect("weak");
    let said = writers(&weak, None);
    assert!(!acls || !said.is_empty(), "{said:?}");
    let mut p = position();
    p.offset = 7;
    let mut kept = Kept::new(&weak, None);
    kept.save(&p).expect("saved");
    drop(kept);
    if acls {
        assert_eq!(access(&text(&weak)).expect("access"), Some(Access::Secret));
    }
    assert_eq!(
        parse(&fs_err::read(&weak).expect("kept")).expect("parsed"),
        p
    );
}
