//! A release zip: any bytes are refused or extracted inside the target directory (never
//! outside it, never past the size cap), never a panic.
#![no_main]

use calicoctl_win::release;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("calico-windows-v3.30.2.zip");
    std::fs::write(&zip, data).expect("write");
    let into = dir.path().join("out");
    std::fs::create_dir(&into).expect("mkdir");
    let (zip_path, into_path) = (
        zip.to_str().expect("a UTF-8 temporary path"),
        into.to_str().expect("a UTF-8 temporary path"),
    );
    let _ = release::extract(
        release::Place::new(&release::Local, zip_path),
        release::Place::new(&release::Local, into_path),
        1 << 20,
    );
    // Nothing but the zip and the target directory beside it.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["calico-windows-v3.30.2.zip", "out"]);
});
