//! `GET /diags` on loopback with a simulated host; a script stands in for `calicoctl-win
//! diags`, writing the zip where the simulated host keeps the install root.

use super::{DIR, Diags};
use crate::duration::Stop;
use crate::fleet::diags::auth::Verdict;
use crate::host::Files;
use crate::host::sim::SimHost;
use crate::layout::InstallRoot;
use crate::supervise::diags_review::Review;
use crate::supervise::log::{Log, LogSettings};
use crate::supervise::metrics_server::serve_with;
use crate::supervise::shared_tests::{StopOnDrop, jwt};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

const ROOT: &str = r"C:\CalicoWindows";

/// A node with its install root and a scratch directory for the stand-in builder.
struct Node {
    host: SimHost,
    root: InstallRoot,
    dir: tempfile::TempDir,
}

impl Node {
    fn new() -> Self {
        let host = SimHost::in_memory("ws2022").expect("host");
        host.create_dir(ROOT).expect("root");
        Self {
            host,
            root: InstallRoot::new(ROOT),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn at(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The builder: the zip goes where the simulated host keeps `ROOT\diags-serve\bundle.zip`.
    fn builder(&self, size: usize, wait_for_release: bool) -> String {
        self.builder_into("bundle.zip", size, wait_for_release, false)
    }

    /// The builder, writing `into`, waiting for `release` before or (`after`) after it writes.
    fn builder_into(&self, into: &str, size: usize, wait: bool, after: bool) -> String {
        let out = self
            .host
            .state_dir()
            .join("fs/c/calicowindows")
            .join(DIR)
            .join(into);
        let wait = if wait {
            format!(
                "while [ ! -e '{}' ]; do /bin/sleep 0.02; done\n",
                self.at("release").display()
            )
        } else {
            String::new()
        };
        let script = format!(
            "/usr/bin/printf '%s ' \"$@\" > '{args}'\n: > '{started}'\n{before}/usr/bin/printf 'PK\\003\\004' > '{out}'\n/usr/bin/head -c {rest} /dev/zero >> '{out}'\n{after}",
            args = self.at("args").display(),
            started = self.at("started").display(),
            out = out.display(),
            rest = size - 4,
            before = if after { "" } else { &wait },
            after = if after { &wait } else { "" },
        );
        crate::supervise::tests::script(self.dir.path(), "diags.sh", &script)
    }

    /// Serves `/diags` (made by `make`) until `body` returns.
    fn serving(&self, make: impl FnOnce(&mut Diags), body: impl FnOnce(SocketAddr)) {
        let stop = Stop::new();
        let log = Log::open(self.at("node.log"), LogSettings::default(), false);
        let mut d = Diags::new(&self.host, &self.root, (&stop, &log), &FakeReview);
        make(&mut d);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::scope(|s| {
            s.spawn(|| serve_with(&self.host, &self.root, Some(&d), &listener, &stop, &log));
            // A failed assertion stops the server too, so the test fails rather than waits.
            let _stop = StopOnDrop(&stop);
            body(addr);
        });
    }
}

/// The API server's review: `good` is `fleet diags`' token for this node, `forbidden` is
/// refused the review, any other is not authenticated.
struct FakeReview;

/// Every token the fake review was asked of (in every test: each test's tokens are its own).
static REVIEWED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn times_reviewed(token: &str) -> usize {
    let reviewed = REVIEWED.lock().unwrap_or_else(|p| p.into_inner());
    reviewed.iter().filter(|t| *t == token).count()
}

impl Review for FakeReview {
    fn review(&self, token: &str, _: &Stop) -> Verdict {
        REVIEWED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(token.to_owned());
        match token {
            t if t == jwt("good") => Verdict::Allowed,
            t if t == jwt("forbidden") => Verdict::Failed {
                forbidden: true,
                why: "403 tokenreviews is forbidden".into(),
            },
            _ => Verdict::Denied("not authenticated for this node".into()),
        }
    }
}

/// The status line, the head and the body of one request's answer.
fn ask(addr: SocketAddr, request: &str) -> (String, String, Vec<u8>) {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.write_all(request.as_bytes()).expect("send");
    let mut all = Vec::new();
    c.read_to_end(&mut all).expect("read");
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4;
    // Header names compared in lower case, as HTTP's are without case (RFC 9110 5.1).
    let head = String::from_utf8_lossy(&all[..end]).to_ascii_lowercase();
    let status = String::from_utf8_lossy(&all[..end])
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    (status, head, all[end..].to_vec())
}

/// A GET with `fleet diags`' token for this node.
fn get(addr: SocketAddr, path: &str) -> (String, String, Vec<u8>) {
    get_with(addr, path, &jwt("good"))
}

fn get_with(addr: SocketAddr, path: &str, token: &str) -> (String, String, Vec<u8>) {
    ask(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: node\r\nCalicoctl-Win-Diags-Token: {token}\r\n\r\n"),
    )
}

/// Waits for the builder to leave `path`; a builder that never does fails the test in 60 s.
fn wait_for(path: &Path) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A bundle is built into the root's own directory, sent whole and removed; meanwhile
/// `/metrics` is answered and a second `/diags` told 503 with Retry-After.
#[test]
fn a_bundle_is_built_under_the_root_streamed_whole_and_removed_while_metrics_answer() {
    let node = Node::new();
    let program = node.builder(300_000, true);
    node.serving(
        |d| d.program = program,
        |addr| {
            std::thread::scope(|s| {
                let first = s.spawn(|| get(addr, "/diags"));
                wait_for(&node.at("started"));
                // Built on the accepting thread, neither would be answered before the deadline.
                let (status, _, body) = get(addr, "/metrics");
                assert_eq!(status, "HTTP/1.1 200 OK");
                assert!(String::from_utf8_lossy(&body).contains("# TYPE"));
                let (status, head, _) = get(addr, "/diags");
                assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
                assert!(head.contains("retry-after: 10\r\n"), "{head}");
                fs_err::write(node.at("release"), "").expect("release");
                let (status, head, body) = first.join().expect("first");
                assert_eq!(status, "HTTP/1.1 200 OK", "{head}");
                assert!(head.contains("content-type: application/zip\r\n"), "{head}");
                assert!(head.contains("content-length: 300000\r\n"), "{head}");
                assert_eq!(body.len(), 300_000);
                assert_eq!(&body[..4], b"PK\x03\x04");
            });
        },
    );
    let args = fs_err::read_to_string(node.at("args")).expect("args");
    assert_eq!(
        args.trim(),
        r"--config C:\CalicoWindows\diags-serve\no-config.yaml --set install_root=C:\CalicoWindows diags --offline --out-file C:\CalicoWindows\diags-serve\bundle.zip"
    );
    assert!(
        !node.host.dir_exists(&node.root.path(DIR)).expect("dir"),
        "the bundle's directory is left"
    );
}

/// A bundle past the cap, or growing past it under `diags`' temporary name, is 413, not cut
/// short; one not made in time is 504; the endpoint is free after each.
#[test]
fn a_bundle_over_the_cap_is_413_and_one_too_slow_is_504() {
    let node = Node::new();
    let (big, slow) = (node.builder(5_000, false), node.builder(1_000, true));
    let growing = node.builder_into(".bundle.zip.calicoctl-win.tmp", 5_000, true, true);
    let (small, default, long) = (4_096, super::BUILD_TIME, Duration::from_secs(30));
    let cases = [
        (big, small, default, "HTTP/1.1 413 Content Too Large"),
        (
            slow,
            super::CAP,
            Duration::from_millis(300),
            "HTTP/1.1 504 Gateway Timeout",
        ),
        (growing, small, long, "HTTP/1.1 413 Content Too Large"),
    ];
    for (program, cap, build_time, want) in cases {
        let make = |d: &mut Diags| (d.program, d.cap, d.build_time) = (program, cap, build_time);
        node.serving(make, |addr| {
            for _ in 0..2 {
                let (status, head, body) = get(addr, "/diags");
                assert_eq!(status, want, "{head}");
                assert!(body.is_empty());
            }
        });
    }
    assert!(!node.host.dir_exists(&node.root.path(DIR)).expect("dir"));
    // The build's wait says what it waits for and when it gives up, as every wait does.
    let log = fs_err::read_to_string(node.at("node.log")).expect("log");
    assert!(
        log.contains("diags endpoint: waiting up to")
            && log.contains("gave up waiting for calicoctl-win diags to build the bundle"),
        "{log}"
    );
}

/// A request without this node's `fleet diags` token is 401 before the bundle's slot; one not
/// shaped as a token is never reviewed; a review refused (403) is 503, kept for status.
#[test]
fn a_request_without_a_token_for_this_node_is_401_before_the_bundles_slot() {
    use crate::health::metrics_findings::diags_review_refused;
    let node = Node::new();
    let program = node.builder(1_000, true);
    node.serving(
        |d| d.program = program,
        |addr| {
            let (status, head, _) = get(addr, "/diags/../diags");
            assert_eq!(status, "HTTP/1.1 404 Not Found", "{head}");
            let bare = ask(addr, "GET /diags HTTP/1.1\r\nHost: node\r\n\r\n");
            assert_eq!(bare.0, "HTTP/1.1 401 Unauthorized", "{}", bare.1);
            assert!(
                bare.1.contains("calicoctl-win-diags: unauthenticated\r\n"),
                "{}",
                bare.1
            );
            assert!(!node.at("started").exists(), "a bundle was made");
            std::thread::scope(|s| {
                let first = s.spawn(|| get(addr, "/diags"));
                wait_for(&node.at("started"));
                for token in [jwt("other-node"), "other-node".into(), String::new()] {
                    let (status, head, _) = get_with(addr, "/diags", &token);
                    assert_eq!(status, "HTTP/1.1 401 Unauthorized", "{token:?}: {head}");
                }
                fs_err::write(node.at("release"), "").expect("release");
                assert_eq!(first.join().expect("first").0, "HTTP/1.1 200 OK");
            });
            // While the API server refuses CalicoNode the review (403), requests are refused 503
            // and status is told (`diags-review-refused`) until a review is answered again.
            fs_err::remove_file(node.at("started")).expect("started");
            let (status, head, _) = get_with(addr, "/diags", &jwt("forbidden"));
            assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{head}");
            assert!(
                head.contains("calicoctl-win-diags: review-failed\r\n"),
                "{head}"
            );
            assert!(!node.at("started").exists(), "a bundle was made");
            let kept = diags_review_refused(&node.host).expect("kept for status");
            assert!(kept.error.contains("403"), "{kept:?}");
            assert_eq!(get(addr, "/diags").0, "HTTP/1.1 200 OK");
            assert_eq!(diags_review_refused(&node.host), None);
        },
    );
    // A value not shaped as a token is refused without a review.
    assert_eq!(
        times_reviewed("other-node"),
        0,
        "a shapeless value was reviewed"
    );
    let log = fs_err::read_to_string(node.at("node.log")).unwrap_or_default();
    assert!(
        !log.contains("other-node") && !log.contains(&jwt("other-node")),
        "a token is in the log: {log}"
    );
}
