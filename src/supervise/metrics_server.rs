//! CalicoNode's metrics endpoint, with `metrics.enabled`: a tiny HTTP/1 server (RFC 9112) that
//! answers `GET /metrics` with calicoctl-win's own metrics (`installed::metrics`) and nothing
//! else, one connection at a time, each request capped in size and time. The port is open
//! only to `metrics.source_ranges` (its firewall rule), and held by CalicoNode alone
//! (`Host::listen_tcp`: SO_EXCLUSIVEADDRUSE on Windows); on a simulated host it listens on the
//! loopback only.

use super::diags_review::Review;
use super::log::Log;
use crate::duration::Stop;
use crate::host::Host;
use crate::host::listen::ListenRefusal;
use crate::installed::metrics_findings::{EndpointDown, keep_endpoint_down};
use crate::layout::InstallRoot;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The largest request head read; a longer one is answered 431.
const MAX_REQUEST: usize = 8 * 1024;
/// How long a client may take, all told, to send its request and read the answer: one
/// deadline for the whole connection, so that a client trickling a byte at a time cannot hold
/// the endpoint (and CalicoNode's stop, which waits for it) past it.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest wait between two tries to listen on a port another program holds.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// CalicoNode's endpoint on `port` (none with metrics off), served until a stop. A port it
/// cannot listen on (another program holds it, named by its pid when the host can tell, or
/// the system keeps it in an excluded range) is tried again, 1 s after the first try and
/// twice as long after each (at most a minute), until it listens or a stop: said in CalicoNode's
/// log at the first refusal and whenever the reason changes, and kept for status
/// (`installed::metrics_findings::EndpointDown`) until it listens. With no port, what an earlier
/// run kept is forgotten. With `diags` (the review of its requests' tokens) it answers
/// `GET /diags` too.
pub fn run(
    host: &dyn Host,
    root: &InstallRoot,
    (port, diags): (Option<u16>, Option<&dyn Review>),
    stop: &Stop,
    log: &Log,
) {
    let forget = || {
        if let Err(e) = keep_endpoint_down(host, None) {
            log.warn(&format!("metrics endpoint: {e}"));
        }
    };
    let Some(port) = port else {
        forget();
        return;
    };
    let mut delay = Duration::from_secs(1);
    let mut down: Option<EndpointDown> = None;
    let listener = loop {
        match host.listen_tcp(port) {
            Ok(l) => break l,
            Err(e) => {
                let (error, refusal) = (e.error, e.refusal);
                if down
                    .as_ref()
                    .is_none_or(|d| d.error != error || d.refusal != refusal)
                {
                    let why = match &refusal {
                        ListenRefusal::Held { pid: Some(pid) } => {
                            format!(" (process {pid} listens on it)")
                        }
                        ListenRefusal::Excluded => {
                            " (no program listens on it: an excluded port range)".into()
                        }
                        _ => String::new(),
                    };
                    log.warn(&format!(
                        "metrics endpoint: cannot listen on TCP port {port}: {error}{why}; trying again, waiting up to {}s between tries",
                        MAX_BACKOFF.as_secs()
                    ));
                    let since = down.as_ref().map_or_else(crate::duration::now, |d| d.since);
                    let now_down = EndpointDown {
                        port,
                        error,
                        since,
                        refusal,
                    };
                    if let Err(e) = keep_endpoint_down(host, Some(&now_down)) {
                        log.warn(&format!("metrics endpoint: {e}"));
                    }
                    down = Some(now_down);
                }
                if stop.wait(delay) {
                    return;
                }
                delay = (delay * 2).min(MAX_BACKOFF);
            }
        }
    };
    if down.is_some() {
        log.info(&format!("metrics endpoint: listening on TCP port {port}"));
    }
    forget();
    serve(host, root, diags, &listener, stop, log);
}

/// Serves until a stop is requested; a failed accept is said and tried again.
/// With `diags` (`metrics.diags`: the review of its requests' tokens) it answers `GET /diags`
/// too (`diags_server`).
pub fn serve(
    host: &dyn Host,
    root: &InstallRoot,
    diags: Option<&dyn Review>,
    listener: &TcpListener,
    stop: &Stop,
    log: &Log,
) {
    let diags = diags.map(|r| super::diags_server::Diags::new(host, root, (stop, log), r));
    serve_with(host, root, diags.as_ref(), listener, stop, log);
}

/// `serve` with the `/diags` endpoint given (a test's, whose builder is its own); its bundles
/// are made on threads that end before this returns.
pub fn serve_with(
    host: &dyn Host,
    root: &InstallRoot,
    diags: Option<&super::diags_server::Diags<'_>>,
    listener: &TcpListener,
    stop: &Stop,
    log: &Log,
) {
    let metrics = || crate::installed::metrics::exposition(host, root);
    std::thread::scope(|scope| {
        accept(
            &metrics,
            diags.map(|d| (d, scope)),
            listener,
            stop,
            log,
            scope,
        );
        // Stopped: the bundle's thread, which the scope waits for, is not left to a slow client.
        if let Some(d) = diags {
            d.cut();
        }
    });
}

type DiagsIn<'s, 'e> = (
    &'s super::diags_server::Diags<'s>,
    &'s std::thread::Scope<'s, 'e>,
);

/// Connections accepted and waiting for the one thread that answers them; one more is closed
/// unanswered. The accept thread only accepts: a client slow to send its request, or a slow
/// read of the metrics files, holds the answering thread, never the accepting one, and a
/// flood of connections costs at most this many sockets.
const QUEUE: usize = 8;

/// Accepts until a stop, handing each connection to a thread (in `scope`) that reads its
/// request and answers it with `metrics` (or hands it to `diags`); the queued connections left
/// at a stop are closed unanswered.
fn accept<'s>(
    metrics: &'s (dyn Fn() -> String + Sync),
    diags: Option<DiagsIn<'s, '_>>,
    listener: &TcpListener,
    stop: &'s Stop,
    log: &Log,
    scope: &'s std::thread::Scope<'s, '_>,
) {
    if let Err(e) = listener.set_nonblocking(true) {
        log.warn(&format!("metrics endpoint: {e}"));
        return;
    }
    let (queue, queued) = std::sync::mpsc::sync_channel::<(TcpStream, Instant)>(QUEUE);
    let answering = scope.spawn(move || {
        for (conn, deadline) in queued {
            if stop.requested() {
                continue;
            }
            // A client that misbehaves costs only its own answer.
            let _ = answer_or_hand(conn, deadline, diags, |path| {
                (path == "/metrics").then(metrics)
            });
        }
    });
    while !stop.requested() {
        match listener.accept() {
            Ok((conn, _)) => {
                // A full queue: this one is closed (dropped) unanswered.
                let _ = queue.try_send((conn, Instant::now() + IO_TIMEOUT));
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
    drop(queue);
    let _ = answering.join();
}

/// Reads one request head (capped) and answers it by `deadline`: `body_of` gives the body of a
/// path it serves to GET.
pub fn answer(
    conn: TcpStream,
    deadline: Instant,
    body_of: impl FnOnce(&str) -> Option<String>,
) -> std::io::Result<()> {
    answer_or_hand(conn, deadline, None, body_of)
}

/// `answer`, but a `GET /diags` goes to `diags` when it is on.
fn answer_or_hand(
    mut conn: TcpStream,
    deadline: Instant,
    diags: Option<DiagsIn<'_, '_>>,
    body_of: impl FnOnce(&str) -> Option<String>,
) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() <= MAX_REQUEST {
        let n = read_by(&mut conn, &mut buf, deadline)?;
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
    if let Some((d, scope)) = diags
        && method == "GET"
        && path == crate::cluster::diags_gather::PATH
        && head.len() <= MAX_REQUEST
    {
        d.take(scope, conn, &text);
        return Ok(());
    }
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
    conn.set_write_timeout(Some(left(deadline)?))?;
    conn.write_all(reply.as_bytes())?;
    conn.flush()?;
    // A lingering close (RFC 9112 9.6): what the client still sends is read (capped, by the
    // same deadline) and dropped, so that closing with unread data does not reset the answer
    // away.
    conn.shutdown(std::net::Shutdown::Write)?;
    let mut drained = 0;
    while drained < 64 * 1024 {
        match read_by(&mut conn, &mut buf, deadline)? {
            0 => break,
            n => drained += n,
        }
    }
    Ok(())
}

/// The time left before `deadline`; none left is a timeout.
fn left(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    Ok(left)
}

/// One read, given only the time left before `deadline`.
fn read_by(conn: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<usize> {
    conn.set_read_timeout(Some(left(deadline)?))?;
    conn.read(buf)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// A client that trickles its request a byte at a time, each within the read timeout, is
    /// cut off at the connection's deadline, not served when it pleases (it once held the
    /// endpoint, and CalicoNode's stop, for as long as it kept trickling).
    #[test]
    fn a_trickling_client_is_cut_off_at_the_connections_deadline() {
        const REQUEST: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let sent = Arc::new(AtomicUsize::new(0));
        let client_sent = sent.clone();
        let client = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            for b in REQUEST {
                std::thread::sleep(Duration::from_millis(200));
                if c.write_all(&[*b]).is_err() {
                    break;
                }
                client_sent.fetch_add(1, Ordering::SeqCst);
            }
        });
        let (conn, _) = listener.accept().expect("accept");
        let answered = super::answer(conn, Instant::now() + Duration::from_millis(500), |_| {
            Some("x".into())
        });
        let sent_by_then = sent.load(Ordering::SeqCst);
        client.join().expect("client");
        assert!(answered.is_err(), "served a trickling client: {answered:?}");
        // Cut off after a few bytes, not at the end of the head (a byte each 200 ms; half the
        // head is 3.6 s past the deadline).
        assert!(
            sent_by_then < REQUEST.len() / 2,
            "the answer waited for the whole trickle ({sent_by_then} bytes)"
        );
    }

    /// The accept thread only accepts: while the answering thread is held (a slow read of the
    /// metrics files, a slow client), a connection past the queue is closed at once rather
    /// than left waiting behind it, and the held one is answered when it is let go. (The
    /// accept thread answered each connection itself, so the one past the queue waited.)
    #[test]
    fn a_held_answer_leaves_the_accept_thread_free() {
        use super::{QUEUE, accept};
        use crate::duration::Stop;
        use crate::supervise::log::{Log, LogSettings};
        use std::io::Read;
        use std::net::TcpStream;
        use std::sync::{Mutex, mpsc};
        const REQUEST: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::open(dir.path().join("node.log"), LogSettings::default(), false);
        let stop = Stop::new();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (entered, held) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let metrics = || {
            let _ = entered.send(());
            let _ = released.lock().expect("lock").recv();
            "m 1\n".to_owned()
        };
        let ask = || {
            let mut c = TcpStream::connect(addr).expect("connect");
            c.write_all(REQUEST).expect("send");
            c
        };
        std::thread::scope(|scope| {
            scope.spawn(|| accept(&metrics, None, &listener, &stop, &log, scope));
            let mut first = ask();
            held.recv().expect("the answer is held");
            let _queued: Vec<TcpStream> = (0..QUEUE).map(|_| ask()).collect();
            let mut past = ask();
            // Only against a hang: the assertion is on what the read returns.
            past.set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let got = past.read(&mut [0u8; 64]);
            let closed = match &got {
                Ok(n) => *n == 0,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            };
            drop(release);
            let mut answer = String::new();
            first.read_to_string(&mut answer).expect("answer");
            stop.request();
            assert!(closed, "the connection past the queue waited: {got:?}");
            assert!(
                answer.starts_with("HTTP/1.1 200") && answer.ends_with("m 1\n"),
                "{answer}"
            );
        });
    }

    /// A program that bound the metrics port first (a squatter, which the simulated host
    /// names as `GetExtendedTcpTable` would) is named by its pid in CalicoNode's log and in
    /// what status reads; a port in an excluded range, which no program holds, is told
    /// apart. (The endpoint bound the loopback itself: neither was seen.)
    #[test]
    fn a_refused_port_is_kept_with_its_holders_pid_or_as_excluded() {
        use crate::duration::Stop;
        use crate::host::listen::ListenRefusal;
        use crate::host::sim::SimHost;
        use crate::installed::metrics_findings::endpoint_down;
        use crate::supervise::log::{Log, LogSettings};
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        for (settings, want, said) in [
            (
                serde_json::json!({"tcp_listeners": {port.to_string(): 4242}}),
                ListenRefusal::Held { pid: Some(4242) },
                "(process 4242 listens on it)",
            ),
            (
                serde_json::json!({"excluded_tcp_ports": [[port - 1, port + 1]]}),
                ListenRefusal::Excluded,
                "an excluded port range",
            ),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            drop(SimHost::open_or_create(dir.path(), None).expect("sim"));
            let file = dir.path().join("state.json");
            let mut state: serde_json::Value =
                serde_json::from_slice(&fs_err::read(&file).expect("state")).expect("json");
            for (k, v) in settings.as_object().expect("settings") {
                state["settings"][k] = v.clone();
            }
            fs_err::write(&file, state.to_string()).expect("state");
            let host = SimHost::open_or_create(dir.path(), None).expect("sim");
            let root = crate::layout::InstallRoot::new(r"C:\CalicoWindows");
            let stop = Stop::new();
            let log = Log::open(dir.path().join("node.log"), LogSettings::default(), false);
            let kept = std::thread::scope(|scope| {
                scope.spawn(|| super::run(&host, &root, (Some(port), None), &stop, &log));
                // Only against a hang: the assertions are on what is kept.
                let mut kept = None;
                for _ in 0..600 {
                    kept = endpoint_down(&host);
                    if kept.is_some() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                stop.request();
                kept
            });
            let kept = kept.expect("the refusal is kept for status");
            assert_eq!(kept.refusal, want);
            let text = fs_err::read_to_string(dir.path().join("node.log")).expect("log");
            assert!(text.contains(said), "{text}");
        }
    }
}
