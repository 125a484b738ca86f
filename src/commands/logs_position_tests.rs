use super::*;
use crate::host::Files;
use crate::host::sim::SimHost;

fn position() -> Position {
    Position {
        head: crate::files::sha256_hex(b"felix 0\n"),
        head_len: 8,
        offset: 1234,
        at: -5,
        in_key: true,
        pending: crate::redact::Pending::Rest(crate::redact::Kind::Quote(34)),
    }
}

#[test]
fn a_record_is_read_back_and_a_torn_or_zero_one_is_refused() {
    let rec = record(&position()).expect("a record");
    assert_eq!(rec.len(), RECORD);
    assert_eq!(parse(&rec).expect("parsed"), position());
    // A longer file's rest left after it (a kill before the cut) changes nothing.
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

/// A simulated node with the directory `C:\pos`, where the tests keep positions.
fn node() -> SimHost {
    let h = SimHost::in_memory("ws2022").expect("host");
    h.create_dir(r"C:\pos").expect("dir");
    h
}

#[test]
fn a_kept_file_is_overwritten_in_place_and_cut_to_one_record() {
    let h = node();
    let path = r"C:\pos\felix.pos";
    // A longer file there before.
    h.write_file(path, &[b'{'; 400], Access::Secret)
        .expect("older");
    let mut kept = Kept::new(&h, path, None);
    let mut p = position();
    kept.save(&p).expect("saved");
    // Held open: what is written next goes into the same file, in place.
    let mut held = h.open_read(path).expect("open").expect("there");
    p.offset = 99_999;
    kept.save(&p).expect("saved");
    drop(kept);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut held, &mut bytes).expect("read");
    assert_eq!(bytes.len(), RECORD);
    assert_eq!(parse(&bytes).expect("parsed"), p);
    assert_eq!(h.file_access(path).expect("access"), Some(Access::Secret));
}

/// A position path through a link Administrators own whose list lets others write is refused,
/// unless it is in the HostProcess container's sandbox this runs in; one only SYSTEM and
/// Administrators may change is followed. (A user's link: tests/lifecycle/logs.rs
/// a_position_path_through_a_link_others_may_change_is_refused.)
#[cfg(unix)]
#[test]
fn a_position_path_through_a_link_others_may_change_is_refused() {
    let h = node();
    h.create_dir(r"C:\CalicoWindows\protected").expect("dir");
    let target = h.local_path(r"C:\CalicoWindows\protected").expect("local");
    let link = h.local_path(r"C:\pos\link").expect("local");
    std::os::unix::fs::symlink(&target, &link).expect("link");
    let path = r"C:\pos\link\felix.pos";
    // Administrators' link with the drive root's list (Users may create files there,
    // FILE_WRITE_DATA: enough to point it elsewhere): refused, unless in this HostProcess
    // container's sandbox, through which its program and config are read too.
    let why = refused_for(&h, path, None, None).expect("refused");
    assert!(
        why.starts_with(r"C:\pos\link is a junction or symbolic link that someone but SYSTEM and Administrators owns or may change (Users may"),
        "{why}"
    );
    // In the sandbox: the link is its mount point or a link to a volume (with or without
    // the trailing `\` of hcsshim's variable).
    for sandbox in [r"C:\pos\link\", r"C:\pos\link", r"C:\pos"] {
        assert_eq!(
            refused_for(&h, path, None, Some(sandbox)),
            None,
            "{sandbox}"
        );
    }
    // Another sandbox, or a drive's root: refused.
    for sandbox in [r"C:\pos\linked", r"C:\other\", r"C:\", "C:"] {
        assert!(
            refused_for(&h, path, None, Some(sandbox)).is_some(),
            "{sandbox}"
        );
    }
    // The same link made by a user, who owns what they make: refused in the sandbox too.
    h.set_security(r"C:\pos\link", "O:BUD:(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;BU)")
        .expect("a user's link");
    let why = refused_for(&h, path, None, Some(r"C:\pos\link\")).expect("refused");
    assert!(why.contains("(its owner Users"), "{why}");
    h.set_security(r"C:\pos\link", crate::host::acl::PROTECTED_DIR)
        .expect("protect the link");
    assert_eq!(refused(&h, path, None), None);
    let mut kept = Kept::new(&h, path, None);
    kept.save(&position())
        .expect("written through a link only SYSTEM and Administrators may change");
    drop(kept);
    assert!(target.join("felix.pos").exists());
}

/// On Windows a new position file is SYSTEM's and Administrators' only, and one Users may
/// change is made anew so. Under Wine (no access lists, as `host::contract::files`) the
/// records are kept through the same calls, the lists not judged.
#[cfg(windows)]
#[test]
fn a_position_file_is_protected_and_one_users_may_change_is_made_anew_on_windows() {
    let acls = std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none();
    let h = crate::host::windows::WindowsHost::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let new = at("new.pos");
    assert_eq!(refused(&h, &new, None), None);
    Kept::new(&h, &new, None).save(&position()).expect("saved");
    if acls {
        assert_eq!(h.file_access(&new).expect("access"), Some(Access::Secret));
    }

    let weak = at("weak.pos");
    let rec = record(&position()).expect("record");
    h.write_file(&weak, &rec, Access::Normal).expect("planted");
    h.set_security(&weak, "O:BAD:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;BU)")
        .expect("weak");
    let said = writers(&h, &weak, None);
    assert!(!acls || !said.is_empty(), "{said:?}");
    let mut p = position();
    p.offset = 7;
    let mut kept = Kept::new(&h, &weak, None);
    kept.save(&p).expect("saved");
    drop(kept);
    if acls {
        assert_eq!(h.file_access(&weak).expect("access"), Some(Access::Secret));
    }
    let bytes = h.read_file(&weak).expect("read").expect("kept");
    assert_eq!(parse(&bytes).expect("parsed"), p);
}

/// A directory on the way swapped for a junction (a symbolic link here) between the judgement
/// and the opening: the handle is elsewhere than the path judged led, so it is refused, both
/// named, and nothing is written to SYSTEM's own file there.
#[cfg(unix)]
#[test]
fn a_link_swapped_in_between_the_judgement_and_the_opening_is_refused() {
    let h = node();
    h.create_dir(r"C:\pos\d").expect("dir");
    h.create_dir(r"C:\elsewhere").expect("dir");
    let path = r"C:\pos\d\felix.pos";
    let rec = record(&position()).expect("record");
    h.write_file(path, &rec, Access::Secret).expect("kept");
    let theirs: &[u8] = b"SYSTEM's own file of this name, no position";
    h.write_file(r"C:\elsewhere\felix.pos", theirs, Access::Secret)
        .expect("theirs");
    let d = h.local_path(r"C:\pos\d").expect("local");
    let elsewhere = h.local_path(r"C:\elsewhere").expect("local");
    h.before_next_open_update(Box::new(move || {
        fs_err::rename(&d, d.with_file_name("aside")).expect("aside");
        std::os::unix::fs::symlink(&elsewhere, &d).expect("the junction");
    }));
    let mut p = position();
    p.offset = 7;
    let e = Kept::new(&h, path, None)
        .save(&p)
        .expect_err("refused")
        .to_string()
        .to_ascii_lowercase();
    assert!(e.contains(r"c:\pos\d\felix.pos"), "{e}");
    assert!(e.contains(r"c:\elsewhere\felix.pos"), "{e}");
    assert_eq!(
        h.read_file(r"C:\elsewhere\felix.pos").expect("read"),
        Some(theirs.to_vec()),
        "nothing written through the link"
    );
}

/// A position file that is a hard link to another file, or a link SYSTEM and Administrators
/// own, in a directory only they may change: the name is trusted, but the handle is no plain
/// file with one name, so it is refused and the other file keeps what it held.
#[cfg(unix)]
#[test]
fn a_position_file_that_is_another_files_second_name_or_a_link_is_refused() {
    let h = node();
    h.set_security(r"C:\pos", crate::host::acl::PROTECTED_DIR)
        .expect("protect");
    let theirs: &[u8] = b"SYSTEM's own file, no position";
    h.write_file(r"C:\pos\system.dat", theirs, Access::Secret)
        .expect("theirs");
    let target = h.local_path(r"C:\pos\system.dat").expect("local");
    type Make = fn(&std::path::Path, &std::path::Path) -> std::io::Result<()>;
    let hard: Make = |t, l| std::fs::hard_link(t, l);
    let soft: Make = |t, l| std::os::unix::fs::symlink(t, l);
    for (name, make) in [("hard.pos", hard), ("soft.pos", soft)] {
        let path = format!(r"C:\pos\{name}");
        make(&target, &h.local_path(&path).expect("local")).expect("link");
        assert_eq!(
            refused(&h, &path, None),
            None,
            "{name}: its name is trusted"
        );
        let e = Kept::new(&h, &path, None)
            .save(&position())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not a plain file with one name"), "{name}: {e}");
        assert_eq!(
            h.read_file(r"C:\pos\system.dat").expect("read"),
            Some(theirs.to_vec()),
            "{name}: the other file is not written"
        );
    }
}

/// On Windows the handle says where it opened (`GetFinalPathNameByHandleW`, as std's
/// `canonicalize`), and a hard link (`CreateHardLinkW`) is no plain file with one name. Where a
/// symbolic link can be made (not under Wine 8, though CreateSymbolicLinkW says it did), a
/// directory swapped for one is seen in the handle's final path and refused.
#[cfg(windows)]
#[test]
fn the_handle_says_where_it_opened_and_another_place_or_name_is_refused_on_windows() {
    use crate::host::same_final_path;
    let h = crate::host::windows::WindowsHost::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let rec = record(&position()).expect("record");
    let plain = at("plain.pos");
    h.write_file(&plain, &rec, Access::Secret).expect("kept");
    let judged = h.final_path(&plain).expect("final").expect("there");
    let canonical = fs_err::canonicalize(&plain).expect("canonical");
    assert!(
        same_final_path(&judged, &canonical.to_string_lossy()),
        "{judged}"
    );
    let opened = h.open_update(&plain).expect("open").expect("there");
    assert!(
        same_final_path(&opened.final_path, &judged),
        "{}",
        opened.final_path
    );
    assert!(opened.sole_plain);
    assert!(bound(&plain, &judged, opened).is_ok());

    let theirs = at("system.dat");
    fs_err::write(&theirs, b"another file").expect("theirs");
    let hard = at("hard.pos");
    fs_err::hard_link(&theirs, &hard).expect("hard link");
    let judged = h.final_path(&hard).expect("final").expect("there");
    let opened = h.open_update(&hard).expect("open").expect("there");
    assert!(!opened.sole_plain, "a second name reads as one");
    let e = bound(&hard, &judged, opened)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("not a plain file with one name"), "{e}");

    let d = dir.path().join("d");
    let elsewhere = dir.path().join("elsewhere");
    for place in [&d, &elsewhere] {
        fs_err::create_dir(place).expect("dir");
        fs_err::write(place.join("felix.pos"), &rec).expect("kept");
    }
    let path = d.join("felix.pos").to_string_lossy().into_owned();
    let judged = h.final_path(&path).expect("final").expect("there");
    fs_err::rename(&d, dir.path().join("aside")).expect("aside");
    if std::os::windows::fs::symlink_dir(&elsewhere, &d).is_err()
        || fs_err::symlink_metadata(&d).is_err()
    {
        eprintln!("skipped the swap: no symbolic link could be made here");
        return;
    }
    let opened = h.open_update(&path).expect("open").expect("there");
    assert!(!same_final_path(&opened.final_path, &judged), "{judged}");
    let e = bound(&path, &judged, opened)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("what was opened is"), "{e}");
}
