//! The one HTTP/1 exchange calicoctl-win speaks by hand, where a full client is too much: a
//! request with `Connection: close`, an answer read until the server closes it and capped, its
//! status line and headers read. Felix's health endpoint on the loopback (`host::http_probe`),
//! the cloud metadata servers (`installed::platform`) and etcd's `/health` over TLS
//! (`cluster::etcd`) all go through it. A leaf: only `std`.

use std::io::{Read, Write};
use std::time::Instant;

/// What a server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub code: u16,
    /// The header lines as sent, names as written.
    pub headers: Vec<(String, String)>,
    /// The body, as text (lossy).
    pub body: String,
}

impl Answer {
    /// A header's value, its name compared without case (RFC 9110 5.1).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A request with no body: `Connection: close`, so the answer ends with the connection.
pub fn request(method: &str, path: &str, host: &str, headers: &[(&str, &str)]) -> String {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if method != "GET" {
        r.push_str("Content-Length: 0\r\n");
    }
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    r
}

/// Sends `request` and reads the answer until the server closes the connection, `cap` bytes
/// came, or `deadline` passed; an error after some of the answer came (a TLS close without
/// `close_notify`) ends the answer there.
pub fn exchange(
    stream: &mut (impl Read + Write),
    request: &str,
    cap: u64,
    deadline: Instant,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    let until = Until {
        inner: stream,
        deadline,
    };
    match until.take(cap).read_to_end(&mut answer) {
        Ok(_) => Ok(answer),
        Err(_) if !answer.is_empty() => Ok(answer),
        Err(e) => Err(e),
    }
}

/// A reader that ends in `TimedOut` once its deadline passed.
struct Until<'a, R> {
    inner: &'a mut R,
    deadline: Instant,
}

impl<R: Read> Read for Until<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if Instant::now() >= self.deadline {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.inner.read(buf)
    }
}

/// The status code, headers and body of an HTTP/1.x answer; `None` when it is not one.
pub fn parse(raw: &[u8]) -> Option<Answer> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let mut status = lines.next()?.split_whitespace();
    if !status.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let code = status
        .next()?
        .parse()
        .ok()
        .filter(|c| (100..600).contains(c))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_owned()
    };
    Some(Answer {
        code,
        headers,
        body,
    })
}

/// A chunked body (RFC 9112 7.1: a hex size line, that many bytes, CRLF; a zero size ends
/// it), as Go's server sends an HTTP/1.1 answer whose length it did not know; a body cut
/// short (by the cap) keeps what came.
fn dechunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    while let Some((line, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            break;
        }
        let take = after.get(..size).unwrap_or(after);
        out.push_str(take);
        rest = after
            .get(size..)
            .unwrap_or_default()
            .trim_start_matches("\r\n");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_with_their_headers_and_others_are_not() {
        let a = parse(b"HTTP/1.1 200 OK\r\nMetadata-Flavor: Google\r\nContent-Length: 2\r\n\r\nok")
            .expect("answer");
        assert_eq!((a.code, a.body.as_str()), (200, "ok"));
        assert_eq!(a.header("metadata-flavor"), Some("Google"));
        assert_eq!(
            parse(b"HTTP/1.0 204 No Content\r\n\r\n").map(|a| a.code),
            Some(204)
        );
        assert_eq!(parse(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(parse(b"HTTP/1.1 999 Odd\r\n\r\n"), None);
        assert_eq!(parse(b""), None);
        let chunked = parse(
            b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfelix\r\n0a\r\n not ready\r\n0\r\n\r\n",
        )
        .expect("answer");
        assert_eq!(chunked.body, "felix not ready");
    }

    #[test]
    fn a_request_closes_its_connection_and_says_it_has_no_body() {
        assert_eq!(
            request("GET", "/health", "10.0.0.5:2379", &[]),
            "GET /health HTTP/1.1\r\nHost: 10.0.0.5:2379\r\nConnection: close\r\n\r\n"
        );
        let put = request("PUT", "/t", "169.254.169.254", &[("X-A", "1")]);
        assert!(put.contains("Content-Length: 0\r\nX-A: 1\r\n\r\n"), "{put}");
    }

    /// The cap holds against an answer that never ends, and a failure after part of the
    /// answer ends it there.
    #[test]
    fn the_answer_is_capped_and_a_late_failure_ends_it() {
        /// A stream answering what `R` reads, taking any request.
        struct Stream<R>(R);
        impl<R: Read> Read for Stream<R> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.0.read(buf)
            }
        }
        impl<R> Write for Stream<R> {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let endless = || Stream(std::io::repeat(b'x'));
        let later = Instant::now() + std::time::Duration::from_secs(60);
        assert_eq!(
            exchange(&mut endless(), "GET / HTTP/1.1\r\n\r\n", 100, later)
                .expect("read")
                .len(),
            100
        );
        // Past the deadline nothing more is read: an endless answer under a large cap ends.
        assert!(exchange(&mut endless(), "x", u64::MAX, Instant::now()).is_err());
        /// Answers "HTTP" once (unless `.0`), then fails.
        struct Cut(bool);
        impl Read for Cut {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    Err(std::io::ErrorKind::UnexpectedEof.into())
                } else {
                    buf[..4].copy_from_slice(b"HTTP");
                    Ok(4)
                }
            }
        }
        assert_eq!(
            exchange(&mut Stream(Cut(false)), "x", 100, later).expect("read"),
            b"HTTP"
        );
        assert!(exchange(&mut Stream(Cut(true)), "x", 100, later).is_err());
    }
}
