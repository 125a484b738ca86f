use super::*;
use crate::host::sim::SimHost;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

const DIR: &str = r"C:\CalicoWindows\logs";

struct Node {
    host: SimHost,
}

impl Node {
    fn new() -> Self {
        let host = SimHost::in_memory("ws2022").expect("host");
        Self { host }
    }

    /// A file in the logs directory, on this machine.
    fn local(&self, name: &str) -> PathBuf {
        let p = self
            .host
            .local_path(&crate::layout::join(DIR, name))
            .expect("path");
        fs_err::create_dir_all(p.parent().expect("parent")).expect("dir");
        p
    }

    fn append(&self, name: &str, text: &str) {
        use std::io::Write as _;
        let mut f = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.local(name))
            .expect("open");
        f.write_all(text.as_bytes()).expect("write");
    }

    fn reader(&self) -> Reader<'_> {
        Reader::new(&self.host, felix(), Redactor::new(&[]))
    }
}

fn felix() -> LogSet {
    LogSet {
        dir: DIR.into(),
        stem: "calico-felix".into(),
    }
}

fn lines(range: std::ops::Range<u32>) -> String {
    range.map(|i| format!("felix line {i}\n")).collect()
}

fn poll(r: &mut Reader, saved: &mut Option<Position>) -> String {
    poll_from(r, saved, Start::Tail(u64::MAX))
}

fn poll_from(r: &mut Reader, saved: &mut Option<Position>, start: Start) -> String {
    let mut out = Vec::new();
    let mut save = |p: &Position| *saved = Some(p.clone());
    r.poll(start, &mut out, &mut save).expect("poll");
    String::from_utf8(out).expect("utf-8")
}

fn read(r: &mut Reader, start: Start) -> String {
    let mut out = Vec::new();
    r.read(start, &mut out).expect("read");
    String::from_utf8(out).expect("utf-8")
}

/// Rotated files are read in the order the service wrote them, by the time and number in
/// their names (`.10` after `.2`), then the current file; other roles' files are not.
#[test]
fn rotated_files_are_read_in_the_order_they_were_written() {
    let n = Node::new();
    n.append("calico-felix-20251121T080003Z.10.log", &lines(3..4));
    n.append("calico-felix-20251121T080003Z.2.log", &lines(2..3));
    n.append("calico-felix-20251121T080003Z.log", &lines(1..2));
    n.append("calico-felix-20251120T235959Z.log", &lines(0..1));
    n.append("calico-felix.log", &lines(4..5));
    n.append("calico-node-20251121T080003Z.log", "node line\n");
    n.append("calico-felix-old.log", "not a rotated felix log\n");
    assert_eq!(read(&mut n.reader(), Start::Tail(u64::MAX)), lines(0..5));
    assert_eq!(read(&mut n.reader(), Start::Tail(2)), lines(3..5));
}

/// --tail reads backwards from the end: the last lines of a 20 MB log cost a chunk, not the
/// file; a tail longer than one file goes on into the rotated one before it.
#[test]
fn a_tail_reads_only_the_end_of_a_large_log() {
    let n = Node::new();
    let line = format!("{}\n", "x".repeat(99));
    let big: String = line.repeat(200_000);
    n.append("calico-felix-20251121T080003Z.log", &big);
    n.append("calico-felix.log", &lines(0..3));
    let mut r = n.reader();
    assert_eq!(read(&mut r, Start::Tail(3)), lines(0..3));
    assert!(r.bytes_read() < 2 * CHUNK as u64, "{}", r.bytes_read());
    let mut r = n.reader();
    assert_eq!(
        read(&mut r, Start::Tail(4)),
        format!("{line}{}", lines(0..3))
    );
    assert!(r.bytes_read() < 4 * CHUNK as u64, "{}", r.bytes_read());
    // A line without its line break is the last line.
    n.append("calico-felix.log", "partial");
    assert_eq!(read(&mut n.reader(), Start::Tail(1)), "partial\n");
}

/// A line longer than a chunk goes out in pieces, none longer than a chunk: memory stays
/// bounded whatever a log holds.
#[test]
fn a_huge_line_goes_out_in_pieces() {
    let n = Node::new();
    n.append(
        "calico-felix.log",
        &format!("{}\nend\n", "y".repeat(3 * CHUNK)),
    );
    let text = read(&mut n.reader(), Start::Tail(u64::MAX));
    assert!(
        text.lines().all(|l| l.len() <= CHUNK),
        "a piece past the chunk"
    );
    assert_eq!(
        text.replace('\n', ""),
        format!("{}end", "y".repeat(3 * CHUNK))
    );
}

/// A clock the test moves: the service's log rotates by it.
fn clock(secs: Arc<AtomicU64>) -> crate::supervise::Clock {
    Arc::new(move || SystemTime::UNIX_EPOCH + Duration::from_secs(secs.load(Ordering::SeqCst)))
}

/// Following the service's own log (supervise's rotating writer, renaming the full file
/// aside) while it rotates between polls, more than once between two: every line once, in
/// order; a line written half waits for its end.
#[test]
fn a_follower_reads_across_the_services_own_rotations() {
    let n = Node::new();
    let secs = Arc::new(AtomicU64::new(1_763_712_000));
    let settings = crate::supervise::LogSettings {
        max_size: 60,
        rotate_every: Duration::from_secs(86_400),
        keep: 10,
    };
    let log = crate::supervise::Log::with_clock(
        n.local("calico-felix.log"),
        settings,
        false,
        clock(secs.clone()),
    );
    let (mut r, mut saved) = (n.reader(), None);
    let mut seen = String::new();
    for i in 0..40u32 {
        log.raw(lines(i..i + 1).as_bytes());
        secs.fetch_add(1, Ordering::SeqCst);
        if i % 9 == 0 {
            seen += &poll(&mut r, &mut saved);
        }
    }
    log.raw(b"half a li");
    seen += &poll(&mut r, &mut saved);
    assert_eq!(seen, lines(0..40));
    log.raw(b"ne\n");
    seen += &poll(&mut r, &mut saved);
    assert_eq!(seen, format!("{}half a line\n", lines(0..40)));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);
    assert!(felix().files(&n.host).expect("files").len() > 5);
}

/// A copy-and-truncate rotation (the copy keeps the file's head) loses and repeats nothing;
/// a truncation in place without a copy is said as a gap, and the new lines are read.
#[test]
fn truncation_is_followed_and_a_gap_is_said() {
    let n = Node::new();
    let (mut r, mut saved) = (n.reader(), None);
    n.append("calico-felix.log", &lines(0..5));
    let mut seen = poll(&mut r, &mut saved);
    n.append("calico-felix.log", &lines(5..8));
    let current = n.local("calico-felix.log");
    fs_err::copy(&current, n.local("calico-felix-20251121T080003Z.log")).expect("copy");
    fs_err::write(&current, lines(8..10)).expect("truncate");
    seen += &poll(&mut r, &mut saved);
    assert_eq!(seen, lines(0..10));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);

    fs_err::write(&current, lines(10..11)).expect("truncate");
    seen += &poll(&mut r, &mut saved);
    assert_eq!(seen, lines(0..11));
    assert_eq!(r.gaps.len(), 1, "{:?}", r.gaps);
}

/// A follower that starts before the log exists reads all of it when it comes.
#[test]
fn a_log_that_comes_later_is_read_from_its_start() {
    let n = Node::new();
    let (mut r, mut saved) = (n.reader(), None);
    let mut seen = poll_from(&mut r, &mut saved, Start::Tail(1));
    n.append("calico-felix.log", &lines(0..3));
    seen += &poll_from(&mut r, &mut saved, Start::Tail(1));
    assert_eq!(seen, lines(0..3));
}

/// --since starts after the last line calicoctl-win stamped before the time: Felix's own
/// lines after it come too, so nothing written after the time is left out; a rotated file
/// that ended before it is not read.
#[test]
fn since_starts_after_the_last_stamped_line_before_the_time() {
    let n = Node::new();
    n.append("calico-felix-20251121T080000Z.log", "old rotated\n");
    n.append(
        "calico-felix.log",
        "2025-11-21T09:00:00Z [calicoctl-win] info: started\nfelix a\n2025-11-21T10:00:00Z [calicoctl-win] info: restarted felix\nfelix b\n2025-11-21T11:00:00Z [calicoctl-win] warning: later\n",
    );
    let t = |s: &str| s.parse::<jiff::Timestamp>().expect("time").as_second();
    let got = read(&mut n.reader(), Start::Since(t("2025-11-21T09:30:00Z")));
    assert_eq!(
        got,
        "felix a\n2025-11-21T10:00:00Z [calicoctl-win] info: restarted felix\nfelix b\n2025-11-21T11:00:00Z [calicoctl-win] warning: later\n"
    );
    let all = read(&mut n.reader(), Start::Since(t("2025-11-21T07:00:00Z")));
    assert!(all.starts_with("old rotated\n"), "{all}");
}

/// A host whose file system runs `hook` once, just before the first opening of `on`: the
/// service rotating between a reader's listing and its opening by name.
struct Racy<'a> {
    host: &'a SimHost,
    on: &'static str,
    hook: std::cell::RefCell<Option<Box<dyn FnOnce() + 'a>>>,
}

/// `Files` calls passed to the host as they are.
macro_rules! to_host {
    ($($f:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {
        $(fn $f(&self, $($a: $t),*) -> HostResult<$r> { self.host.$f($($a),*) })*
    };
}

impl crate::host::Files for Racy<'_> {
    fn open_read(&self, path: &str) -> HostResult<Option<File>> {
        let hook = (path.to_ascii_lowercase().ends_with(self.on))
            .then(|| self.hook.borrow_mut().take())
            .flatten();
        if let Some(hook) = hook {
            hook();
        }
        self.host.open_read(path)
    }
    to_host! {
        list_dir(path: &str) -> Option<Vec<crate::host::DirEntry>>;
        open_update(path: &str) -> Option<crate::host::OpenedFile>;
        final_path(path: &str) -> Option<String>;
        read_file(path: &str) -> Option<Vec<u8>>;
        replace_file(path: &str, c: &[u8], a: crate::host::Access) -> ();
        file_access(path: &str) -> Option<crate::host::Access>;
        copy_in(from: &std::path::Path, to: &str) -> ();
        copy_file(from: &str, to: &str, a: crate::host::Access) -> bool;
        remove_file(path: &str) -> bool;
        remove_empty_dir(path: &str) -> bool;
        remove_tree(path: &str) -> bool;
        dir_exists(path: &str) -> bool;
        security(path: &str) -> Option<String>;
        link_security(path: &str) -> Option<String>;
        create_dir(path: &str) -> bool;
        is_reparse_point(path: &str) -> bool;
        set_security(path: &str, sddl: &str) -> ();
        local_path(path: &str) -> PathBuf;
    }
}

impl Node {
    /// The service's rotation: the current file renamed aside, `text` in a new one.
    fn rotate(&self, rotated: &str, text: &str) {
        fs_err::rename(self.local("calico-felix.log"), self.local(rotated)).expect("rotate");
        self.append("calico-felix.log", text);
    }

    fn racy<'a>(&'a self, hook: impl FnOnce() + 'a) -> Racy<'a> {
        Racy {
            host: &self.host,
            on: "\\calico-felix.log",
            hook: std::cell::RefCell::new(Some(Box::new(hook))),
        }
    }
}

/// A rotation between the listing and the opening of a file by name loses nothing and is no
/// gap: after a rotated file was read, the renamed file is read before the new one; the file
/// a follower is in is found under its new name.
#[test]
fn a_rotation_between_listing_and_opening_loses_nothing() {
    let n = Node::new();
    n.append("calico-felix-20251121T080000Z.log", &lines(0..2));
    n.append("calico-felix.log", &lines(2..4));
    let disk = n.racy(|| n.rotate("calico-felix-20251121T090000Z.log", &lines(4..5)));
    let mut r = Reader::new(&disk, felix(), Redactor::new(&[]));
    let mut saved = None;
    assert_eq!(poll(&mut r, &mut saved), lines(0..5));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);

    n.append("calico-felix.log", &lines(5..7));
    let disk = n.racy(|| n.rotate("calico-felix-20251121T100000Z.log", &lines(7..8)));
    let mut r = Reader::new(&disk, felix(), Redactor::new(&[]));
    r.position = saved.clone();
    assert_eq!(poll(&mut r, &mut saved), lines(5..8));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);
}

/// A line longer than a chunk goes out in pieces, each redacted alone: no secret is cut in two
/// (a JWT, a bearer or basic credential, a URL's password, a named value), a value after its
/// name in the next piece goes, and so do the words of a value cut inside; the text after the
/// secret stays, and no piece is longer than a chunk.
#[test]
fn a_secret_at_the_cut_of_a_long_line_is_redacted() {
    let near = |from: usize| (CHUNK - from..CHUNK - 2).step_by(3).collect::<Vec<_>>();
    let short = &[CHUNK - 12, CHUNK - 7, CHUNK - 3][..];
    let wide = &[CHUNK - 30, CHUNK - 20, CHUNK - 9, CHUNK - 3][..];
    let cut_parts = &["bGciOi", "fgh123", "eyJhb"][..];
    let words = &["correct", "horse", "battery", "staple"][..];
    #[rustfmt::skip]
    let cases: &[Cut] = &[
        (" eyJhbGciOi.eyJzdWIiOi.c2ln after", short, cut_parts, &["<redacted>"]),
        (" Bearer abcdefgh12345 after", short, cut_parts, &["Bearer <redacted>"]),
        (r#" "token": "abcdefgh12345" after"#, short, cut_parts, &[r#"token": "<redacted>""#]),
        (" Authorization: Basic dXNlcjpwYXNz after", wide, &["dXNlcjpw"], &["<redacted>"]),
        (" http://calico:hunter2pass@proxy:3128 after", wide, &["hunter2"], &["<redacted>"]),
        (" FOO_API_KEY=apikeyvalue1 after", wide, &["apikeyval"], &["<redacted>"]),
        (r#" {"name":"X_TOKEN","value":"cutsecret1"} after"#, &near(50),
            &["cutsecret1", "secret1"], &["after"]),
        (" {Password:correct horse battery staple Other:kept1}\nnext line", &near(40),
            words, &["Other:kept1}", "\nnext line\n"]),
        (" map[password:correct horse battery staple other:kept2]\nnext line", &near(40),
            words, &["other:kept2]", "\nnext line\n"]),
    ];
    for &(secret, befores, gone, shown) in cases {
        for &before in befores {
            let n = Node::new();
            let padded = format!("{}{secret}\n", "x".repeat(before));
            n.append("calico-felix.log", &padded);
            let text = read(&mut n.reader(), Start::Tail(u64::MAX));
            let tail = &text[before - 10..];
            for part in gone {
                assert!(
                    !text.contains(part),
                    "{part} of {secret:?} at {before}: {tail}"
                );
            }
            for part in shown {
                assert!(
                    text.contains(part),
                    "{part:?} of {secret:?} at {before}: {tail}"
                );
            }
            let last = padded.rsplit(' ').next().unwrap_or_default();
            assert!(text.ends_with(last), "{secret:?} at {before}: {tail}");
            // A Go value's words redacted may outgrow the chunk by a few bytes: not checked.
            let long = text.lines().map(str::len).max();
            let go_value = gone == words;
            assert!(
                go_value || long <= Some(CHUNK),
                "{long:?} {secret:?} at {before}"
            );
        }
    }
}

/// A line after its padding, the paddings, what goes and what stays.
type Cut<'a> = (&'a str, &'a [usize], &'a [&'a str], &'a [&'a str]);

const KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nc2VjcmV0a2V5Ym9keQ\nbW9yZWtleWJvZHk=\n-----END RSA PRIVATE KEY-----\nafter the key\n";

/// A follower started again with its position inside a private key's block hides the rest
/// of it (a tail starting there: `a_logs_private_keys_are_hidden_as_diags_hides_them`).
#[test]
fn a_follower_started_inside_a_private_key_hides_the_rest() {
    let n = Node::new();
    n.append("calico-felix.log", &format!("before\n{}", &KEY[..49]));
    let mut saved = None;
    let first = poll(&mut n.reader(), &mut saved);
    assert_eq!(
        first,
        "before\n-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n"
    );
    n.append("calico-felix.log", &KEY[49..]);
    let mut again = n.reader();
    again.position =
        serde_json::from_str(&serde_json::to_string(&saved).expect("json")).expect("json");
    let second = poll(&mut again, &mut saved);
    assert_eq!(
        second,
        "<redacted>\n<redacted>\n<redacted>\nafter the key\n"
    );
}

/// A position taken before the log had a byte (its head is every file's) goes on with the
/// files rotated since it was taken, then the current one: nothing written meanwhile is lost.
#[test]
fn a_position_taken_on_an_empty_log_reads_what_rotated_since() {
    let n = Node::new();
    n.append("calico-felix-20251121T070000Z.log", "before the position\n");
    n.append("calico-felix-20251121T090000Z.log", &lines(0..2));
    n.append("calico-felix.log", &lines(2..4));
    let at = "2025-11-21T08:00:00Z"
        .parse::<jiff::Timestamp>()
        .expect("t");
    let mut r = n.reader();
    r.position = Some(Position {
        head: crate::files::sha256_hex(b""),
        head_len: 0,
        offset: 0,
        at: at.as_second(),
        in_key: false,
        pending: Pending::None,
    });
    assert_eq!(poll(&mut r, &mut None), lines(0..4));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);
}

/// A log's private keys as `logs` shows them, from wherever reading starts: a tail starting
/// inside a key (hidden to its END line, also when its BEGIN line is further back than the
/// reader looks); the log starting inside a key; a block without its END line ends at the
/// first line a key cannot hold; an indented key (klog prints each line of a multi-line value
/// after a tab, a YAML block scalar indents with blanks) keeps each line's indentation as
/// `diags` does (`redact_keys`).
#[test]
fn a_logs_private_keys_are_hidden_as_diags_hides_them() {
    let body: String = (0..200).map(|i| format!("{:064}\n", i)).collect();
    let far = format!(
        "before\n-----BEGIN PRIVATE KEY-----\n{body}-----END PRIVATE KEY-----\nafter the key\n"
    );
    let (near, all) = (format!("before\n{KEY}"), Start::Tail(u64::MAX));
    #[rustfmt::skip]
    let cases = [
        (near.as_str(), Start::Tail(3), "<redacted>\n<redacted>\nafter the key\n"),
        (far.as_str(), Start::Tail(4), "<redacted>\n<redacted>\n<redacted>\nafter the key\n"),
        (&KEY[32..], all, "<redacted>\n<redacted>\n<redacted>\n<redacted>\nafter the key\n"),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nfelix: a line of the log again\nnext\n",
            all,
            "-----BEGIN PRIVATE KEY-----\n<redacted>\nfelix: a line of the log again\nnext\n",
        ),
        (
            "data=<\n\t-----BEGIN RSA PRIVATE KEY-----\n\tMIIEowIBAAKCAQEA\n\tc2VjcmV0a2V5Ym9keQ\n\t-----END RSA PRIVATE KEY-----\n >\nafter the key\n",
            all,
            "data=<\n\t-----BEGIN RSA PRIVATE KEY-----\n\t<redacted>\n\t<redacted>\n\t<redacted>\n >\nafter the key\n",
        ),
        (
            "  key: |\n    -----BEGIN PRIVATE KEY-----\n    MIIEowIBAAKCAQEA\n    c2VjcmV0a2V5Ym9keQ\n    -----END PRIVATE KEY-----\nafter the key\n",
            all,
            "  key: |\n    -----BEGIN PRIVATE KEY-----\n    <redacted>\n    <redacted>\n    <redacted>\nafter the key\n",
        ),
    ];
    for (text, start, want) in cases {
        let n = Node::new();
        n.append("calico-felix.log", text);
        assert_eq!(read(&mut n.reader(), start), want, "{text:?} {start:?}");
    }
}

/// What a rotated file's last line leaves pending (a secret's quote not closed, a piece of a
/// line without its line break) ends with its file: the next file's lines are its own.
#[test]
fn a_rotated_files_pending_value_ends_with_the_file() {
    let n = Node::new();
    n.append("calico-felix-20251121T080000Z.log", "password: \"abc\n");
    n.append(
        "calico-felix-20251121T090000Z.log",
        "{Password:correct horse",
    );
    n.append("calico-felix.log", &lines(0..2));
    let all = read(&mut n.reader(), Start::Tail(u64::MAX));
    assert!(!all.contains("abc") && !all.contains("horse"), "{all}");
    assert!(all.ends_with(&lines(0..2)), "{all}");
}
