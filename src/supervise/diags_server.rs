//! `GET /diags` on CalicoNode's metrics endpoint (`metrics.diags`): the node's redacted zip for
//! `fleet diags`, built by `calicoctl-win diags --offline` as a child into the root's own `DIR`,
//! one at a time, within `BUILD_TIME` and `CAP` (413 past it). Only a token the API server reviews
//! as `fleet diags`' for this node is served (`diags_review`); each answer carries `ANSWER_HEADER`.
//!
//! Plain HTTP: the pod proxy does not verify pod certificates (kubernetes/kubernetes
//! `cmd/kube-apiserver/app/server.go`, `CreateProxyTransport`: `InsecureSkipVerify`).

use super::log::Log;
use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_until};
use crate::host::Host;
use crate::host::process::{Output, ProcessSpec};
use crate::layout::InstallRoot;
use hyper::StatusCode;
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER as RETRY};
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::diags_review::{Review, Reviewed, jwt_shaped};
use crate::fleet::diags::auth::Verdict;
use crate::fleet::diags::{ANSWER_HEADER, NODE_BUILD_TIME, NODE_SEND_TIME as SEND_TIME};
use crate::layout::{DIAGS_SERVE_DIR as DIR, DIAGS_SERVE_FILES};
/// The most a bundle may hold: what `fleet diags` reads of one (`diags::BUNDLE_CAP`).
pub const CAP: u64 = 8 << 20;
/// How long building a bundle may take, within `fleet diags`' node timeout.
pub const BUILD_TIME: Duration = NODE_BUILD_TIME;
/// An answer of the metrics endpoint, whole in memory (a bundle is at most `CAP`).
pub type Answer = hyper::Response<http_body_util::Full<bytes::Bytes>>;
/// How long an answer without a bundle (the metrics' text, a refusal) may take to send.
pub const ANSWER_TIME: Duration = Duration::from_secs(5);
/// What a client told 503 is asked to wait, in seconds.
const RETRY_AFTER: u64 = 10;
/// How many requests' tokens are reviewed at once; more are told 503.
const REVIEWS_AT_ONCE: usize = 2;

/// The `/diags` endpoint: at most one bundle in the making.
pub struct Diags<'a> {
    host: &'a dyn Host,
    root: &'a InstallRoot,
    stop: &'a Stop,
    log: &'a Log,
    busy: AtomicBool,
    /// How many requests' tokens are being reviewed.
    reviewing: AtomicUsize,
    review: &'a dyn Review,
    reviewed: Reviewed,
    /// The program that builds the bundle: `calicoctl-win.exe` under the root, or a test's.
    pub program: String,
    pub build_time: Duration,
    pub cap: u64,
}

impl<'a> Diags<'a> {
    pub fn new(
        host: &'a dyn Host,
        root: &'a InstallRoot,
        (stop, log): (&'a Stop, &'a Log),
        review: &'a dyn Review,
    ) -> Self {
        Self {
            host,
            root,
            stop,
            log,
            busy: AtomicBool::new(false),
            reviewing: AtomicUsize::new(0),
            review,
            reviewed: Reviewed::default(),
            program: root.self_exe(),
            build_time: BUILD_TIME,
            cap: CAP,
        }
    }

    /// Answers a `GET /diags` carrying `token`, with the time its answer may take to send:
    /// 401 for no token or a bad one, 503 when busy, else the bundle.
    pub fn answer(&self, token: Option<&str>) -> (Answer, Duration) {
        let token = token
            .filter(|t| jwt_shaped(t))
            .filter(|t| !self.reviewed.refused_lately(t));
        let Some(token) = token else {
            return refused(StatusCode::UNAUTHORIZED, "unauthenticated");
        };
        if self.reviewing.fetch_add(1, Ordering::SeqCst) >= REVIEWS_AT_ONCE {
            self.reviewing.fetch_sub(1, Ordering::SeqCst);
            return refused(StatusCode::SERVICE_UNAVAILABLE, "busy");
        }
        let verdict = self.reviewed.verdict(token, self.review, self.stop);
        self.reviewing.fetch_sub(1, Ordering::SeqCst);
        if self.stop.requested() {
            return refused(StatusCode::SERVICE_UNAVAILABLE, "stopping");
        }
        if let Some(refusal) = self.judged(verdict) {
            return refusal;
        }
        // The bundle's slot.
        if self.busy.swap(true, Ordering::SeqCst) {
            return refused(StatusCode::SERVICE_UNAVAILABLE, "busy");
        }
        let answer = self.bundle();
        self.busy.store(false, Ordering::SeqCst);
        (answer, SEND_TIME)
    }

    /// The refusal of a reviewed request, said; a 403 on the review is kept for status.
    fn judged(&self, verdict: Verdict) -> Option<(Answer, Duration)> {
        // Any answer of the review is kept for status; a failure other than 403 tells nothing.
        let refused_review = match &verdict {
            Verdict::Failed {
                forbidden: false, ..
            } => None,
            Verdict::Failed { why, .. } => Some(Some(why.as_str())),
            _ => Some(None),
        };
        if let Some(refused) = refused_review {
            let kept =
                crate::health::metrics_findings::keep_diags_review_refused(self.host, refused);
            self.log.failed("diags endpoint", kept);
        }
        match verdict {
            Verdict::Allowed => None,
            Verdict::Denied(why) | Verdict::Unsettled(why) => {
                self.log
                    .info(&format!("diags endpoint: refused a request: {why}"));
                Some(refused(StatusCode::UNAUTHORIZED, "unauthenticated"))
            }
            Verdict::Failed { why, .. } => {
                self.log.warn(&format!(
                    "diags endpoint: cannot review a request's token, so it is refused: {why}"
                ));
                Some(refused(StatusCode::SERVICE_UNAVAILABLE, "review-failed"))
            }
        }
    }

    /// Builds the bundle, reads it and removes it: the answer with it, or why not.
    fn bundle(&self) -> Answer {
        let dir = self.root.path(DIR);
        let [file, tmp, none] = DIAGS_SERVE_FILES.map(|f| crate::layout::join(&dir, f));
        // What a killed build left is ours: the directory is only this endpoint's.
        let _ = self.host.remove_tree(&dir);
        let built = self.host.create_dir(&dir).map_err(std::io::Error::other);
        let built = built.and_then(|_| self.build(&file, &tmp, &none));
        let failed = |e: std::io::Error| {
            self.log
                .warn(&format!("diags endpoint: building the bundle: {e}"));
            marked(StatusCode::INTERNAL_SERVER_ERROR, "build-failed")
        };
        let answer = match built {
            Ok(Built::Whole(size)) => match self.read(&file, size) {
                Ok(zip) => {
                    let mut answer = marked(StatusCode::OK, "bundle");
                    let headers = answer.headers_mut();
                    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/zip"));
                    *answer.body_mut() = zip.into();
                    answer
                }
                Err(e) => failed(e),
            },
            Ok(Built::TooBig) => {
                let mut answer = marked(StatusCode::PAYLOAD_TOO_LARGE, "too-big");
                // RFC 9110 15.5.14's name.
                answer
                    .extensions_mut()
                    .insert(hyper::ext::ReasonPhrase::from_static(b"Content Too Large"));
                answer
            }
            Ok(Built::TimedOut) => marked(StatusCode::GATEWAY_TIMEOUT, "build-timed-out"),
            Ok(Built::Stopped) => marked(StatusCode::SERVICE_UNAVAILABLE, "stopping"),
            Err(e) => failed(e),
        };
        let _ = self.host.remove_tree(&dir);
        answer
    }

    /// The whole bundle, at most `size` bytes (the size judged against the cap).
    fn read(&self, file: &str, size: u64) -> std::io::Result<Vec<u8>> {
        let f = self
            .host
            .open_read(file)
            .map_err(std::io::Error::other)?
            .ok_or_else(|| std::io::Error::other("the bundle is gone"))?;
        let mut zip = Vec::new();
        f.take(size).read_to_end(&mut zip)?;
        Ok(zip)
    }

    /// Runs `calicoctl-win diags` into `file`, watching its size (and its temporary `tmp`'s)
    /// and time; `none` is the empty config written when the root holds none.
    fn build(&self, file: &str, tmp: &str, none: &str) -> std::io::Result<Built> {
        // The root's own config, else an empty one: never the default path's, in a directory
        // any user may make, which `diags` would read as SYSTEM.
        let mut config = self.root.path("calico-windows.yaml");
        if self.host.stat(&config).ok().flatten().is_none() {
            self.host
                .write_file(none, b"{}\n", crate::host::Access::Normal)
                .map_err(std::io::Error::other)?;
            config = none.to_owned();
        }
        let mut args = vec!["--config".to_owned(), config];
        // This install's root, whatever the config says: not the default root's files.
        args.extend([
            "--set".to_owned(),
            format!("install_root={}", self.root.as_str()),
        ]);
        args.extend(["diags", "--offline", "--out-file", file].map(String::from));
        let spec = ProcessSpec {
            program: self.program.clone(),
            args,
            env: Default::default(),
            cwd: None,
            output: Output::Null,
        };
        let mut child = self.host.spawn(&spec).map_err(std::io::Error::other)?;
        let size_of = |f: &str| self.host.stat(f).ok().flatten().map(|(s, _)| s);
        let size = || size_of(file);
        let wait = Wait {
            what: "calicoctl-win diags to build the bundle",
            timeout: self.build_time,
            pauses: Pauses::every(Duration::from_millis(100)),
            stop: self.stop,
            say: &mut |l: &str| self.log.info(&format!("diags endpoint: {l}")),
        };
        let look = || -> Result<Look<Built, ()>, BuildEnded> {
            if size().max(size_of(tmp)).is_some_and(|s| s > self.cap) {
                return Ok(Look::Done(Built::TooBig));
            }
            // `diags` exits 2 after writing the zip when the config cannot be read: the zip counts.
            let exited = child
                .wait_timeout(Duration::ZERO)
                .map_err(|e| BuildEnded::Io(std::io::Error::other(e)))?;
            Ok(match (exited, size()) {
                (None, _) => Look::Pending(()),
                (Some(_), Some(s)) if s > self.cap => Look::Done(Built::TooBig),
                (Some(_), Some(s)) => Look::Done(Built::Whole(s)),
                (Some(_), None) => {
                    return Err(BuildEnded::Io(std::io::Error::other(
                        "calicoctl-win diags wrote no zip",
                    )));
                }
            })
        };
        let end = match poll_until(wait, look, |()| Ok(Built::TimedOut)) {
            Ok(b) => b,
            Err(BuildEnded::Stopped) => Built::Stopped,
            Err(BuildEnded::Io(e)) => return Err(e),
        };
        if !matches!(end, Built::Whole(_)) {
            let _ = child.stop(Duration::from_secs(2));
        }
        Ok(end)
    }
}

/// How building a bundle ended.
enum Built {
    Whole(u64),
    TooBig,
    TimedOut,
    Stopped,
}

/// How the build's wait ended other than with the bundle's fate: a failed call, or the stop.
enum BuildEnded {
    Io(std::io::Error),
    Stopped,
}

impl From<Stopped> for BuildEnded {
    fn from(_: Stopped) -> Self {
        Self::Stopped
    }
}

/// An answer without a body, marked with `word` (`ANSWER_HEADER`); a 503 with `Retry-After`.
pub fn marked(status: StatusCode, word: &'static str) -> Answer {
    let mut answer = Answer::new(Default::default());
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        headers.insert(RETRY, HeaderValue::from(RETRY_AFTER));
    }
    headers.insert(ANSWER_HEADER, HeaderValue::from_static(word));
    answer
}

/// A refusal before the bundle's slot, with its time to send.
fn refused(status: StatusCode, word: &'static str) -> (Answer, Duration) {
    (marked(status, word), ANSWER_TIME)
}

#[cfg(all(test, unix))]
#[path = "diags_server_tests.rs"]
mod tests;
