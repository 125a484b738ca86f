//! The download: streamed to `<dest>.part` while hashed, never held in memory; a `.part` left by
//! an interrupted run is resumed with a Range request; the finished file gets its name only
//! when its checksum is right.

use super::disk::Disk;
use super::error::ReleaseError;
use super::stream::{FailOnDrop, Growth};
use super::want::{Want, parse_sha256};
use crate::files::hex;
use sha2::Digest;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Reports how a download advances (a bar on a terminal, periodic lines otherwise).
pub trait Progress {
    fn begin(&mut self, what: &str, total: Option<u64>, done: u64);
    fn advance(&mut self, done: u64);
    fn end(&mut self);
}

/// No progress reporting.
impl Progress for () {
    fn begin(&mut self, _: &str, _: Option<u64>, _: u64) {}
    fn advance(&mut self, _: u64) {}
    fn end(&mut self) {}
}

fn part_path(dest: &str) -> String {
    format!("{dest}{}", crate::layout::PARTIAL_SUFFIX)
}

/// The proxy for `url` from the environment captured at start-up: `HTTPS_PROXY` (or
/// `HTTP_PROXY` for an http URL), with reqwest's own `NO_PROXY` matching.
fn proxy_for(
    url: &reqwest::Url,
    env: &BTreeMap<String, String>,
) -> Result<Option<reqwest::Proxy>, reqwest::Error> {
    let names: &[&str] = if url.scheme() == "https" {
        &["HTTPS_PROXY", "https_proxy"]
    } else {
        &["HTTP_PROXY", "http_proxy"]
    };
    let get = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| env.get(*n))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let Some(chosen) = get(names) else {
        return Ok(None);
    };
    let no_proxy = get(&["NO_PROXY", "no_proxy"]).and_then(|np| reqwest::NoProxy::from_string(&np));
    Ok(Some(reqwest::Proxy::all(&chosen)?.no_proxy(no_proxy)))
}

fn client(
    url: &str,
    want: &Want,
    env: &BTreeMap<String, String>,
) -> Result<reqwest::blocking::Client, ReleaseError> {
    let fail = |source: reqwest::Error| ReleaseError::Download {
        url: url.into(),
        source: source.without_url(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| ReleaseError::BadUrl {
        url: url.into(),
        message: e.to_string(),
    })?;
    let mut b = reqwest::blocking::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(30).min(want.timeout))
        // reqwest's blocking timeout bounds the wait for the headers and then each read of
        // the body: the idle limit. The total one is checked between reads (`download`).
        .timeout(want.idle_timeout.min(want.timeout))
        .user_agent(concat!("calicoctl-win/", env!("CARGO_PKG_VERSION")));
    if let Some(p) = proxy_for(&parsed, env).map_err(fail)? {
        b = b.proxy(p);
    }
    if let Some(pem) = &want.ca_pem {
        b = b.tls_certs_merge(reqwest::Certificate::from_pem_bundle(pem).map_err(fail)?);
    }
    b.build().map_err(fail)
}

/// The SHA-256 that a `SHA256SUMS` file beside `url` gives for `name` (lines of `HEX  NAME` or
/// `HEX *NAME`, as sha256sum writes them); anything else is `None`, and `--sha256` is needed.
pub fn published_checksum(
    url: &str,
    name: &str,
    want: &Want,
    env: &BTreeMap<String, String>,
) -> Option<String> {
    use std::io::Read as _;
    let sums_url = reqwest::Url::parse(url).ok()?.join("SHA256SUMS").ok()?;
    let client = client(sums_url.as_str(), want, env).ok()?;
    let resp = client.get(sums_url).send().ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let mut text = String::new();
    // A checksum list is small; a larger answer is not one.
    resp.take(1 << 20).read_to_string(&mut text).ok()?;
    text.lines().find_map(|line| {
        let (hex, file) = line.trim().split_once(char::is_whitespace)?;
        let file = file
            .trim_start()
            .trim_start_matches('*')
            .trim_start_matches("./");
        (file == name).then(|| parse_sha256(hex).ok()).flatten()
    })
}

/// The GET of the zip, from byte `have` on when part of it is here already.
fn send(
    client: &reqwest::blocking::Client,
    url: &str,
    have: u64,
    limits: &Limits,
) -> Result<reqwest::blocking::Response, ReleaseError> {
    let mut req = client.get(url);
    if have > 0 {
        req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    req.send().map_err(|source| {
        if source.is_timeout() {
            limits.timed_out(limits.asked)
        } else {
            ReleaseError::Download {
                url: url.into(),
                // reqwest's message names the URL: it is said once, shown (`ReleaseError`).
                source: source.without_url(),
            }
        }
    })
}

/// Downloads `url` to `dest` on `disk`, returning its SHA-256. The checksum asked for is
/// checked before `dest` gets its name; a wrong one removes the partial file. `growth`, when
/// given, is told how much of the partial file is written, for an extraction that follows it.
pub fn download(
    url: &str,
    disk: &dyn Disk,
    dest: &str,
    want: &Want,
    env: &BTreeMap<String, String>,
    progress: &mut dyn Progress,
    growth: Option<&Growth>,
) -> Result<String, ReleaseError> {
    let mut unfinished = FailOnDrop(growth);
    let part = part_path(dest);
    let client = client(url, want, env)?;
    let limits = Limits::new(url, want);
    // What an interrupted run left: hashed again, then resumed.
    let (mut hasher, mut have) = hash_part(disk, &part)?;
    let mut resp = send(&client, url, have, &limits)?;
    let status = resp.status().as_u16();
    let resumed = status == 206 && have > 0;
    let complete_already = status == 416 && have > 0;
    let mut file = if resumed || complete_already {
        disk.write(&part, true)
            .map_err(part_io(&part, "cannot open"))?
    } else if (200..300).contains(&status) {
        hasher = sha2::Sha256::new();
        have = 0;
        disk.write(&part, false)
            .map_err(part_io(&part, "cannot create"))?
    } else {
        return Err(ReleaseError::Status {
            url: url.into(),
            status,
        });
    };
    if let Some(g) = growth {
        let reader = super::disk::Place::new(disk, &part).open();
        g.start(reader.map_err(part_io(&part, "cannot read"))?, have);
    }
    if !complete_already {
        let total = resp.content_length().map(|l| l + have);
        progress.begin(&crate::redact::shown(url), total, have);
        let body = Body {
            resp: &mut resp,
            file: &mut file,
            hasher: &mut hasher,
            part: &part,
        };
        have = receive(body, have, &limits, progress, growth)?;
        progress.end();
    }
    if let Some(g) = unfinished.0.take() {
        g.complete(have);
    }
    // Not synced to disk: a cached zip is hashed again before it is used, and a partial one
    // when it is resumed, so a copy a power loss damaged is downloaded again, never used.
    drop(file);
    let actual = hex(&hasher.finalize());
    if let Some(expected) = &want.sha256
        && *expected != actual
    {
        let _ = disk.remove_file(&part);
        return Err(ReleaseError::Checksum {
            what: url.into(),
            expected: expected.clone(),
            actual,
        });
    }
    disk.rename(&part, dest)
        .map_err(part_io(&part, "cannot rename"))?;
    Ok(actual)
}

/// An I/O error on the partial file, naming it.
fn part_io(part: &str, op: &str) -> impl Fn(std::io::Error) -> ReleaseError {
    let op = format!("{op} {part}");
    move |e| ReleaseError::io(op.clone(), e)
}

/// The SHA-256 state and length of what an interrupted run left in `part` (nothing: empty).
fn hash_part(disk: &dyn Disk, part: &str) -> Result<(sha2::Sha256, u64), ReleaseError> {
    let mut hasher = sha2::Sha256::new();
    let mut have = 0u64;
    let Some(mut f) = disk.open(part).map_err(part_io(part, "cannot read"))? else {
        return Ok((hasher, have));
    };
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(part_io(part, "cannot read"))?;
        if n == 0 {
            return Ok((hasher, have));
        }
        hasher.update(&buf[..n]);
        have += n as u64;
    }
}

/// The download's two time limits and which one fired.
struct Limits<'a> {
    url: &'a str,
    want: &'a Want,
    asked: Instant,
    deadline: Instant,
}

impl<'a> Limits<'a> {
    fn new(url: &'a str, want: &'a Want) -> Self {
        let asked = Instant::now();
        Self {
            url,
            want,
            asked,
            deadline: asked + want.timeout,
        }
    }

    fn idle(&self, last_data: Instant) -> bool {
        last_data.elapsed() >= self.want.idle_timeout.min(self.want.timeout)
    }

    /// The idle limit when nothing came for that long, else the total one.
    fn timed_out(&self, last_data: Instant) -> ReleaseError {
        let idle = self.idle(last_data) && self.want.idle_timeout < self.want.timeout;
        ReleaseError::Timeout {
            url: self.url.into(),
            after: if idle {
                self.want.idle_timeout
            } else {
                self.want.timeout
            },
            idle,
        }
    }
}

/// The response body and where it goes.
struct Body<'a> {
    resp: &'a mut reqwest::blocking::Response,
    file: &'a mut std::fs::File,
    hasher: &'a mut sha2::Sha256,
    part: &'a str,
}

/// Writes and hashes the body from `have` bytes on; the length at its end.
fn receive(
    b: Body<'_>,
    mut have: u64,
    limits: &Limits<'_>,
    progress: &mut dyn Progress,
    growth: Option<&Growth>,
) -> Result<u64, ReleaseError> {
    let mut buf = vec![0u8; 1 << 16];
    let mut last_data = Instant::now();
    loop {
        let n = b.resp.read(&mut buf).map_err(|e| {
            if limits.idle(last_data) || Instant::now() >= limits.deadline {
                limits.timed_out(last_data)
            } else {
                ReleaseError::io(
                    format!(
                        "the download of {} broke off (the partial file {} is resumed by the next run)",
                        crate::redact::shown(limits.url),
                        b.part
                    ),
                    e,
                )
            }
        })?;
        if n == 0 {
            return Ok(have);
        }
        b.file
            .write_all(&buf[..n])
            .map_err(part_io(b.part, "cannot write"))?;
        b.hasher.update(&buf[..n]);
        have += n as u64;
        if let Some(g) = growth {
            g.grew(have);
        }
        last_data = Instant::now();
        progress.advance(have);
        if Instant::now() >= limits.deadline {
            b.file.sync_all().map_err(part_io(b.part, "cannot write"))?;
            return Err(limits.timed_out(last_data));
        }
    }
}
