use super::*;
use std::io::Write;

/// A path of this machine as a place on its disk.
fn on(p: &Path) -> Place<'_> {
    Place::new(&Local, p.to_str().expect("a UTF-8 temporary path"))
}
use std::time::Duration;

/// Writes a zip with these (name, contents) entries; a name ending in `@link` is a symlink.
fn zip_of(path: &Path, entries: &[(&str, &[u8])]) {
    let f = std::fs::File::create(path).expect("create zip");
    let mut z = zip::ZipWriter::new(f);
    let opts = zip::write::SimpleFileOptions::default();
    for (name, data) in entries {
        if let Some(link) = name.strip_suffix("@link") {
            z.add_symlink(link, "../../etc/passwd", opts)
                .expect("symlink");
        } else {
            z.start_file(*name, opts).expect("start");
            z.write_all(data).expect("write");
        }
    }
    z.finish().expect("finish");
}

fn release(binary: &str) -> Vec<(String, Vec<u8>)> {
    vec![
        (format!("CalicoWindows/{binary}"), b"exe".to_vec()),
        ("CalicoWindows/cni/calico.exe".into(), b"cni".to_vec()),
        ("CalicoWindows/cni.conf.template".into(), b"{}".to_vec()),
        (
            "CalicoWindows/confd/conf.d/blocks.toml".into(),
            b"toml".to_vec(),
        ),
    ]
}

fn extract_entries(name: &str, entries: &[(&str, &[u8])]) -> Result<Extracted, ReleaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join(name);
    zip_of(&zip, entries);
    let out = dir.path().join("out");
    let r = extract(on(&zip), on(&out), 1 << 20);
    // Keep the directory alive only for the assertions on the result.
    std::mem::forget(dir);
    r
}

/// A chosen release from `source`, with no checksum, version or exception given.
fn want(source: Source) -> Want {
    Want {
        chosen: true,
        source,
        sha256: None,
        version: None,
        allow_http: false,
        skip_checksum: false,
        ca_pem: None,
        timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(1),
    }
}

/// A temporary directory holding `r.zip` of `entries`, and the zip's path.
fn zipped(entries: &[(String, Vec<u8>)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("r.zip");
    zip_of(&zip, &borrowed(entries));
    (dir, zip)
}

fn borrowed(v: &[(String, Vec<u8>)]) -> Vec<(&str, &[u8])> {
    v.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect()
}

/// The v3.30 layout, its version from the zip's name (its binary records none); calico.exe with
/// its version from the binary alone is tests/lifecycle/releases.rs
/// `each_release_is_started_with_its_own_command_lines` (3.33.0).
#[test]
fn the_calico_node_layout_is_recognised_with_the_version_in_the_zips_name() {
    let old = extract_entries(
        "calico-windows-v3.30.0.zip",
        &borrowed(&release("calico-node.exe")),
    )
    .expect("v3.30 layout");
    assert_eq!(old.binary, Binary::CalicoNode);
    assert_eq!(old.version.as_deref(), Some("3.30.0"));
    assert_eq!(old.cni.len(), 1);
    assert_eq!(old.confd[0].0, r"confd\conf.d\blocks.toml");
}

/// Extracts `release("calico.exe")` with `added` entries (of `x`; a name ending in `@link` is a
/// symlink): the refusal, after which nothing was written in or beside the target.
fn refused(added: &[&str]) -> ReleaseError {
    let mut entries = release("calico.exe");
    entries.extend(added.iter().map(|n| ((*n).to_owned(), b"x".to_vec())));
    let (dir, zip) = zipped(&entries);
    let out = dir.path().join("out");
    let err = extract(on(&zip), on(&out), 1 << 20).expect_err("refused");
    let beside = dir.path().join("evil.txt");
    assert!(!out.exists() && !beside.exists(), "{added:?}: {err}");
    err
}

/// Every entry is checked before anything is written: one escaping the target, a symlink, two
/// entries that are one file on Windows (case, trailing dots and spaces) and a name Windows
/// reads otherwise are refused; so is an archive expanding past the cap.
#[test]
fn unsafe_entries_are_refused_before_anything_is_written() {
    let cases: &[(&[&str], &str)] = &[
        (&["CalicoWindows/../../evil.txt"], "escapes the target"),
        (&["../evil.txt"], "escapes the target"),
        (&[r"CalicoWindows\..\..\evil.txt"], "escapes the target"),
        (&["/abs/evil.txt"], "absolute path"),
        (&["C:/evil.txt"], "names a drive"),
        (&["CalicoWindows/passwd@link"], "symbolic link"),
        (
            &["CalicoWindows/config.ps1", "CalicoWindows/CONFIG.PS1"],
            "same file on Windows",
        ),
        (
            &["CalicoWindows/config.ps1", "CalicoWindows/config.ps1. "],
            "same file on Windows",
        ),
        (
            &["CalicoWindows/cni/x.exe", "calicowindows/CNI/x.exe"],
            "same file on Windows",
        ),
        (&["CalicoWindows/a\0b.exe"], "NUL"),
        (&["CalicoWindows/.. ./x"], "reduces to nothing"),
        (&["CalicoWindows/nul.txt"], "device"),
        (&["CalicoWindows/COM1"], "device"),
        (&["CalicoWindows/CALICO~1.EXE"], "8.3 short name"),
        (&["CALICOW~1/calico.exe"], "8.3 short name"),
        (&["CalicoWindows/cni/CALICO~12"], "8.3 short name"),
    ];
    for (added, why) in cases {
        let err = refused(added);
        assert!(
            matches!(&err, ReleaseError::Unsafe { why: w, .. } if w.contains(why)),
            "{added:?}: {err}"
        );
    }
    let mut entries = release("calico.exe");
    entries.push(("CalicoWindows/big.bin".into(), vec![0u8; 2 << 20]));
    let err = extract_entries("r.zip", &borrowed(&entries)).expect_err("too big");
    assert!(matches!(err, ReleaseError::TooLarge { .. }), "{err}");
}

#[test]
fn an_unknown_layout_says_what_is_missing() {
    let err = extract_entries("r.zip", &[("README.txt", b"hi")]).expect_err("no root");
    assert!(err.to_string().contains("no CalicoWindows folder"), "{err}");
    let err =
        extract_entries("r.zip", &[("CalicoWindows/cni/calico.exe", b"x")]).expect_err("no binary");
    assert!(err.to_string().contains("neither calico.exe"), "{err}");
}

/// A URL's refusals without a checksum, and with one but no --allow-http, are
/// tests/lifecycle/install.rs `bad_releases_are_refused_and_leave_nothing_behind`'s (with
/// --insecure-skip-checksum a download goes on there), the cache's name from the URL
/// `a_broken_download_is_resumed_by_the_next_install`'s.
#[test]
fn urls_need_https_unless_told_otherwise() {
    let mut want = want(Source::parse("http://mirror/calico-windows-v3.30.0.zip"));
    want.allow_http = true;
    assert!(refuse_plain_http(&want).is_ok());
    assert!(parse_sha256("abc").is_err());
    assert_eq!(
        parse_sha256(&"AB".repeat(32)).expect("hex"),
        "ab".repeat(32)
    );
    // The form container tooling prints (`sha256:HEX`).
    assert_eq!(
        parse_sha256(&format!("sha256:{}", "Cd".repeat(32))).expect("prefixed"),
        "cd".repeat(32)
    );
    assert!(parse_sha256("sha256:").is_err());
    assert!(parse_sha256(&format!("md5:{}", "ab".repeat(32))).is_err());
    assert_eq!(
        official_url("v3.30.0"),
        "https://github.com/projectcalico/calico/releases/download/v3.30.0/calico-windows-v3.30.0.zip"
    );
}

#[test]
fn a_version_mismatch_is_refused_and_an_unknown_version_needs_a_checksum() {
    let x = extract_entries(
        "calico-windows-v3.30.0.zip",
        &borrowed(&release("calico-node.exe")),
    )
    .expect("layout");
    let mut want = Want {
        version: Some("3.29.0".into()),
        ..want(Source::Path("x.zip".into()))
    };
    assert!(matches!(
        check_version(&want, &x, "x.zip"),
        Err(ReleaseError::Version { .. })
    ));
    want.version = Some("v3.30.0".into());
    assert!(check_version(&want, &x, "x.zip").is_ok());
    let unknown = Extracted { version: None, ..x };
    assert!(check_version(&want, &unknown, "x.zip").is_err());
    want.sha256 = Some("0".repeat(64));
    assert!(check_version(&want, &unknown, "x.zip").is_ok());
}

/// The same name twice: written as two names of one length, then made equal in the bytes.
#[test]
fn an_archive_listing_one_name_twice_is_refused_before_anything_is_written() {
    let mut entries = release("calico.exe");
    entries.push(("CalicoWindows/aaaa.txt".into(), b"first".to_vec()));
    entries.push(("CalicoWindows/bbbb.txt".into(), b"second".to_vec()));
    let (dir, zip) = zipped(&entries);
    let mut bytes = fs_err::read(&zip).expect("read");
    let (from, to) = (b"CalicoWindows/bbbb.txt", b"CalicoWindows/aaaa.txt");
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(from.len()).position(|w| w == from) {
        bytes[i + at..i + at + to.len()].copy_from_slice(to);
        i += at + to.len();
    }
    fs_err::write(&zip, bytes).expect("write");
    let out = dir.path().join("out");
    let err = extract(on(&zip), on(&out), 1 << 20).expect_err("duplicate");
    assert!(
        matches!(&err, ReleaseError::Unsafe { why, .. } if why.contains("more than once")),
        "{err}"
    );
    assert!(!out.exists(), "{err}");
}

/// Whether the file at `path` comes to hold what `ok` accepts, within 10 s.
fn comes_to(path: &Path, ok: impl Fn(&[u8]) -> bool) -> bool {
    use crate::duration::{Look, Pauses, poll_quietly};
    let look = || {
        Ok::<_, ()>(match fs_err::read(path) {
            Ok(got) if ok(&got) => Look::Done(true),
            _ => Look::Pending(()),
        })
    };
    let until = std::time::Instant::now() + Duration::from_secs(10);
    poll_quietly(
        until,
        Pauses::every(Duration::from_millis(10)),
        look,
        |()| Ok(false),
    ) == Ok(true)
}

#[test]
fn a_download_is_extracted_while_it_arrives_and_confirmed_against_the_finished_zip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("calico-windows-v3.30.0.zip");
    let mut entries = release("calico-node.exe");
    // Incompressible, so that half of the entry's data inflates to about half of it.
    let mut big = vec![0u8; 1 << 20];
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for b in &mut big {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    // The version marker straddles two of the inflater's 64 KiB blocks.
    let marker = b"github.com/projectcalico/calico/pkg/buildinfo.Version=v3.30.1 -X";
    big[(1 << 16) - 20..(1 << 16) - 20 + marker.len()].copy_from_slice(marker);
    entries.insert(0, ("CalicoWindows/first.bin".into(), big.clone()));
    entries[1].1 = big.clone();
    zip_of(&zip, &borrowed(&entries));
    let bytes = fs_err::read(&zip).expect("zip");
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zip).expect("open")).expect("zip");
    let mut at = |i| archive.by_index(i).expect("entry").header_start() as usize;
    let (first, second) = (at(0), at(1));

    let staging = dir.path().join("staging");
    fs_err::create_dir(&staging).expect("staging");
    let part = dir.path().join("r.zip.part");
    let growth = stream::Growth::default();
    let followed = std::thread::scope(|s| {
        let follower = s.spawn(|| stream::follow(&growth, on(&staging), 1 << 30));
        // A failed assertion ends the follower instead of leaving it waiting for bytes.
        let _unfinished = stream::FailOnDrop(Some(&growth));
        // The zip "downloaded" into `part` up to `to`: appended, `growth` told.
        let mut file = std::fs::File::create(&part).expect("part");
        growth.start(std::fs::File::open(&part).expect("reader"), 0);
        let mut arrived = 0;
        let mut arrive = |to: usize| {
            file.write_all(&bytes[arrived..to]).expect("append");
            arrived = to;
            growth.grew(to as u64);
        };
        // Half of the first entry's data.
        arrive(first + (second - first) / 2);
        // A proper, non-empty prefix of the entry.
        assert!(
            comes_to(&staging.join("CalicoWindows/first.bin"), |got| {
                !got.is_empty() && got.len() < big.len() && big.starts_with(got)
            }),
            "an entry inflates while its data arrives"
        );
        arrive(second + 10);
        assert!(
            comes_to(&staging.join("CalicoWindows/first.bin"), |got| got == big),
            "the first entry is whole before the rest of the zip arrives"
        );
        assert!(!follower.is_finished(), "the follower waits for more");
        arrive(bytes.len());
        growth.complete(bytes.len() as u64);
        follower.join().expect("follower")
    })
    .expect("streamed");
    assert_eq!(followed.files.len(), entries.len());
    stream::confirm(on(&part), &followed, 1 << 30)
        .expect("the finished zip lists what was streamed");
    // The version was read while the binary was inflated, never from the file afterwards: a
    // binary changed since tells nothing.
    let exe = staging.join("CalicoWindows/calico-node.exe");
    fs_err::write(&exe, b"buildinfo.Version=v9.9.9 ").expect("overwrite");
    let x = extract::layout(
        on(&staging),
        zip.to_str().expect("utf-8"),
        &followed.versions,
    )
    .expect("layout");
    assert_eq!(x.binary, Binary::CalicoNode);
    assert_eq!(x.version.as_deref(), Some("3.30.1"));
}

/// A local entry the central directory does not list (its name changed there only) streams,
/// but is not confirmed.
#[test]
fn an_entry_hidden_from_the_central_directory_is_not_confirmed() {
    let mut entries = release("calico.exe");
    entries.push(("CalicoWindows/hidden.exe".into(), b"evil".to_vec()));
    let (dir, zip) = zipped(&entries);
    let mut bytes = fs_err::read(&zip).expect("zip");
    let cd = find(&bytes, &[0x50, 0x4b, 0x01, 0x02]);
    let at = cd + find(&bytes[cd..], b"hidden.exe");
    bytes[at..at + 6].copy_from_slice(b"listed");
    fs_err::write(&zip, &bytes).expect("zip");
    let staging = dir.path().join("staging");
    fs_err::create_dir(&staging).expect("staging");
    let growth = stream::Growth::default();
    growth.start(std::fs::File::open(&zip).expect("reader"), 0);
    growth.complete(bytes.len() as u64);
    let files = stream::follow(&growth, on(&staging), 1 << 30).expect("every local entry streams");
    assert!(files.files.contains_key("CalicoWindows/hidden.exe"));
    assert!(
        stream::confirm(on(&zip), &files, 1 << 30).is_err(),
        "the stream held a file the archive does not list"
    );
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

/// `--release-zip` given with a credential in it is said in errors and output with the
/// credential hidden, the rest of it kept: an Azure SAS URL (learn.microsoft.com/rest/api/
/// storageservices/create-service-sas: its `sig=` is the signature, a credential to the
/// account), and a URL's userinfo, which reqwest sends as basic auth (a token as the user,
/// with an empty password or GitHub's `x-oauth-basic`, or a user and password).
#[test]
fn a_credential_in_the_release_url_is_said_nowhere() {
    for (url, secret, kept) in [
        (
            "https://acct.blob.core.windows.net/rel/calico-windows-v3.30.0.zip?sv=2022-11-02&sp=r&sig=Zm9vYmFy%2Bsig%3D",
            "Zm9vYmFy",
            "calico-windows-v3.30.0.zip?sv=2022-11-02&sp=r&sig=<redacted>",
        ),
        (
            "https://ghp_Tok3nTok3n@raw.example.com/rel/calico-windows-v3.30.0.zip",
            "Tok3n",
            "https://<redacted>@raw.example.com/rel/calico-windows-v3.30.0.zip",
        ),
        (
            "https://ghp_Tok3nTok3n:@raw.example.com/rel/calico-windows-v3.30.0.zip",
            "Tok3n",
            "https://<redacted>@raw.example.com/rel/calico-windows-v3.30.0.zip",
        ),
        (
            "https://ghp_Tok3nTok3n:x-oauth-basic@github.com/o/r/calico-windows-v3.30.0.zip",
            "Tok3n",
            "https://<redacted>@github.com/o/r/calico-windows-v3.30.0.zip",
        ),
        (
            "https://builder:Pa55w0rd@mirror.example/calico-windows-v3.30.0.zip",
            "Pa55w0rd",
            "https://<redacted>@mirror.example/calico-windows-v3.30.0.zip",
        ),
    ] {
        let want = want(Source::parse(url));
        let status = ReleaseError::Status {
            url: url.into(),
            status: 403,
        };
        let said = [
            want.source.show(),
            check_url(&want, url).expect_err("no checksum").to_string(),
            status.to_string(),
            format!("{status:?}"),
            format!("{:?}", want.source),
        ];
        for text in said {
            assert!(!text.contains(secret), "{text}");
            assert!(text.contains(kept), "{text}");
        }
    }
}
