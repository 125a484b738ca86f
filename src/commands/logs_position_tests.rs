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
    let mut kept = Kept::new(&path);
    let mut p = position();
    kept.save(&p).expect("saved");
    p.offset = 99_999;
    kept.save(&p).expect("saved");
    drop(kept);
    let bytes = fs_err::read(&path).expect("kept");
    assert_eq!(bytes.len(), RECORD);
    assert_eq!(parse(&bytes).expect("parsed"), p);
}
