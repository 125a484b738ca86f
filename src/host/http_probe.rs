//! A GET to a server on the loopback (Felix's health endpoint): the status and at most
//! `MAX_ANSWER` bytes, or `None` when nothing listens; every step has one timeout.

use super::{HostError, HostResult};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// The most of an answer that is read (status line, headers and body).
pub const MAX_ANSWER: u64 = 64 * 1024;

/// What a local HTTP server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub code: u16,
    /// The body, as text (lossy), trimmed.
    pub body: String,
}

impl Answer {
    /// 2xx or 3xx, as Calico's probe takes it (node/pkg/health/health.go `checkFelixHealth`).
    pub fn is_good(&self) -> bool {
        (200..400).contains(&self.code)
    }
}

/// `GET path` from `127.0.0.1:port`; `None` when nothing listens.
pub fn get(port: u16, path: &str, timeout: Duration) -> HostResult<Option<Answer>> {
    get_with(port, path, timeout, TcpStream::connect_timeout)
}

/// Whether a failed loopback connect means nothing listens: refused, or timed out (Windows
/// retries the SYN for about 2 s: Microsoft KB175523).
fn not_listening(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::TimedOut
    )
}

fn get_with(
    port: u16,
    path: &str,
    timeout: Duration,
    connect: impl FnOnce(&SocketAddr, Duration) -> std::io::Result<TcpStream>,
) -> HostResult<Option<Answer>> {
    let what = format!("GET http://127.0.0.1:{port}{path}");
    let io = |e: std::io::Error| HostError::io(what.clone(), e);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = match connect(&addr, timeout) {
        Ok(s) => s,
        Err(e) if not_listening(&e) => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let request = crate::http1::request("GET", path, &format!("127.0.0.1:{port}"), &[]);
    let deadline = std::time::Instant::now() + timeout.saturating_mul(2);
    let raw = crate::http1::exchange(&mut stream, &request, MAX_ANSWER, deadline).map_err(io)?;
    match crate::http1::parse(&raw) {
        Some(a) => Ok(Some(Answer {
            code: a.code,
            body: a.body.trim().to_owned(),
        })),
        None => Err(HostError::refused(what, "the answer is not HTTP")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A loopback server answering one request with `answer`, as Felix's health server does
    /// (libcalico-go lib/health/health.go `genResponse`).
    fn serve(answer: &'static [u8]) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(answer);
            }
        });
        port
    }

    #[test]
    fn felixs_answers_are_read_as_calicos_probe_reads_them() {
        let t = Duration::from_secs(5);
        for (answer, code, good, body) in [
            (
                &b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ntable\r\n\r\n"[..],
                200,
                true,
                "table",
            ),
            (b"HTTP/1.1 204 No Content\r\n\r\n", 204, true, ""),
            (
                b"HTTP/1.1 503 Service Unavailable\r\n\r\nfelix-startup  not ready",
                503,
                false,
                "felix-startup  not ready",
            ),
        ] {
            let a = get(serve(answer), "/readiness", t)
                .expect("get")
                .expect("answer");
            assert_eq!((a.code, a.is_good(), a.body.as_str()), (code, good, body));
        }
        let garbage = serve(b"SSH-2.0-OpenSSH\r\n");
        assert!(get(garbage, "/readiness", t).is_err());
    }

    /// A loopback connect timed out (Windows' SYN retries, KB175523) is nothing listening;
    /// any other failure is an error.
    #[test]
    fn a_loopback_connect_that_times_out_is_nothing_listening() {
        use std::io::{Error, ErrorKind};
        let t = Duration::from_secs(2);
        let timed_out = |_: &SocketAddr, _: Duration| Err(Error::from(ErrorKind::TimedOut));
        assert_eq!(
            get_with(9099, "/liveness", t, timed_out).expect("get"),
            None
        );
        let refused = |_: &SocketAddr, _: Duration| Err(Error::from(ErrorKind::ConnectionRefused));
        assert_eq!(get_with(9099, "/liveness", t, refused).expect("get"), None);
        let denied = |_: &SocketAddr, _: Duration| Err(Error::from(ErrorKind::PermissionDenied));
        assert!(get_with(9099, "/liveness", t, denied).is_err());
    }

    #[test]
    fn an_endless_answer_is_cut_at_the_cap() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
                let chunk = vec![b'x'; 8192];
                while s.write_all(&chunk).is_ok() {}
            }
        });
        let a = get(port, "/readiness", Duration::from_secs(5))
            .expect("get")
            .expect("answer");
        assert!(a.body.len() < MAX_ANSWER as usize, "{}", a.body.len());
    }
}
