//! CalicoNode's metrics endpoint, with `metrics.enabled`: a tiny HTTP/1 server (RFC 9112) that
//! answers `GET /metrics` with calicoctl-win's own metrics (`installed::metrics`) and nothing
//! else, one connection at a time, each request capped in size and time. The port is open
//! only to `metrics.source_ranges` (its firewall rule); on a simulated host it listens on the
//! loopback only.

use super::log::Log;
use super::stop::Stop;
use crate::host::Host;
use crate::layout::InstallRoot;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// The largest request head read; a longer one is answered 431.
const MAX_REQUEST: usize = 8 * 1024;
/// How long a client may take to send its request or read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves until a stop is requested; a failed accept is said and tried again.
pub fn serve(host: &dyn Host, root: &InstallRoot, listener: &TcpListener, stop: &Stop, log: &Log) {
    if let Err(e) = listener.set_nonblocking(true) {
        log.warn(&format!("metrics endpoint: {e}"));
        return;
    }
    while !stop.requested() {
        match listener.accept() {
            Ok((conn, _)) => {
                // A client that misbehaves costs only its own answer.
                let _ = answer(conn, |path| {
                    (path == "/metrics").then(|| crate::installed::metrics::exposition(host, root))
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                stop.wait(Duration::from_millis(100));
            }
            Err(e) => {
                log.warn(&format!("metrics endpoint: accept: {e}"));
                stop.wait(Duration::from_secs(1));
            }
        }
    }
}

/// Reads one request head (capped) and answers it: `body_of` gives the body of a path it
/// serves to GET.
pub fn answer(
    mut conn: TcpStream,
    body_of: impl FnOnce(&str) -> Option<String>,
) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(IO_TIMEOUT))?;
    conn.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() <= MAX_REQUEST {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut parts = text.lines().next().unwrap_or_default().split(' ');
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let (status, body) = if head.len() > MAX_REQUEST {
        ("431 Request Header Fields Too Large", String::new())
    } else if method != "GET" {
        ("405 Method Not Allowed", String::new())
    } else {
        match body_of(path) {
            Some(b) => ("200 OK", b),
            None => ("404 Not Found", String::new()),
        }
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes())?;
    conn.flush()?;
    // A lingering close (RFC 9112 9.6): what the client still sends is read (capped) and
    // dropped, so that closing with unread data does not reset the answer away.
    conn.shutdown(std::net::Shutdown::Write)?;
    std::io::copy(&mut conn.take(64 * 1024), &mut std::io::sink()).map(drop)
}

/// The address to listen on: every address on Windows (the firewall rule scopes it), the
/// loopback elsewhere.
pub fn bind(host: &dyn Host, port: u16) -> std::io::Result<TcpListener> {
    let ip = if host.kind() == crate::host::HostKind::Windows {
        "0.0.0.0"
    } else {
        "127.0.0.1"
    };
    TcpListener::bind((ip, port))
}
