//! CalicoNode's metrics endpoint (`metrics.enabled`): hyper answers `GET /metrics` (and
//! `GET /diags` with `metrics.diags`), each connection on its own thread, capped in number,
//! per source, size and time. The port is held alone (`Host::listen_tcp`).

use super::diags_review::Review;
use super::diags_server::{ANSWER_TIME, Answer, Diags};
use super::log::Log;
use super::turn_away::{Count, Full, TurnAway};
use crate::duration::Stop;
use crate::health::metrics_findings::{
    EndpointDown, keep_connection, keep_endpoint_down, keep_listening,
};
use crate::host::Host;
use crate::host::listen::ListenRefusal;
use crate::layout::InstallRoot;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, StatusCode};
use std::cell::Cell;
use std::net::{IpAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The largest request head read; a longer one is answered 431 (by hyper).
const MAX_REQUEST: usize = 8 * 1024;
/// The most turned-away connections answered at once; one more is closed at once.
const HELD: usize = 32;
/// The longest wait between two tries to listen on a port another program holds.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Serves CalicoNode's endpoint on `port` until a stop; none with metrics off. A refused port
/// is tried again with backoff (1 s doubling to a minute), said and kept for status
/// (`health::metrics_findings::EndpointDown`) until it listens.
pub fn run(
    host: &dyn Host,
    root: &InstallRoot,
    (port, diags): (Option<u16>, Option<&dyn Review>),
    stop: &Stop,
    log: &Log,
) {
    let Some(port) = port else {
        return log.failed(SAID, keep_endpoint_down(host, None));
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
                    let why = match (&refusal, refusal.holder()) {
                        (_, Some(holder)) => format!(" ({holder})"),
                        (ListenRefusal::Excluded, _) => {
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
                    log.failed(SAID, keep_endpoint_down(host, Some(&now_down)));
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
    log.failed(SAID, keep_endpoint_down(host, None));
    log.failed(SAID, keep_listening(host, crate::duration::now()));
    let diags = diags.map(|r| Diags::new(host, root, (stop, log), r));
    serve_with(host, root, diags.as_ref(), &listener, stop, log);
}

/// Serves until a stop, `GET /diags` too with `diags`; every connection's thread ends before
/// it returns.
pub fn serve_with(
    host: &dyn Host,
    root: &InstallRoot,
    diags: Option<&Diags<'_>>,
    listener: &TcpListener,
    stop: &Stop,
    log: &Log,
) {
    use crate::installed::metrics::{NODE_FILE, REFUSED_CONNECTIONS, bump};
    let metrics = || crate::installed::metrics::exposition(host, root);
    let count = |reason: &str, n: u64| {
        let series = format!("{REFUSED_CONNECTIONS}{{reason=\"{reason}\"}}");
        log.failed(SAID, bump(host, root, NODE_FILE, &series, n));
    };
    // Each connection from beyond the node kept, for status's `metrics_findings::unscraped`.
    let seen = |peer: IpAddr| log.failed(SAID, keep_connection(host, peer, crate::duration::now()));
    accept(&metrics, diags, listener, stop, (log, &count, &seen));
}

/// What a failure to keep something for status or metrics is said as (`Log::failed`).
const SAID: &str = "metrics endpoint";

/// The most connections answered at once, each on its own thread; one more is answered 503.
const CONNECTIONS: usize = 16;
/// The most of them one remote address holds, so an idle caller leaves room for the scraper
/// and the API server's pod proxy (`fleet diags`).
pub const PER_SOURCE: usize = 4;
/// How long a client may take to send its request head, from its accept.
const HEAD_TIME: Duration = Duration::from_secs(3);

/// The connections being answered, by remote address with a clone of the socket: counted
/// against the caps, and shut down at a stop.
#[derive(Default)]
struct Open(std::sync::Mutex<(u64, Vec<Entered>)>);

/// An open connection: its id, its remote address and a clone of its socket.
type Entered = (u64, IpAddr, TcpStream);

impl Open {
    /// Counts `conn` from `source`, by the id returned; refused with the cap it is past (or
    /// none when its socket cannot be cloned, so could not be cut at a stop).
    fn enter(&self, conn: &TcpStream, source: IpAddr) -> Result<u64, Option<Full>> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let of_source = open.1.iter().filter(|(_, s, _)| *s == source).count();
        if open.1.len() >= CONNECTIONS {
            return Err(Some(Full::All));
        }
        if of_source >= PER_SOURCE {
            return Err(Some(Full::Source));
        }
        let clone = conn.try_clone().map_err(|_| None)?;
        open.0 += 1;
        let id = open.0;
        open.1.push((id, source, clone));
        Ok(id)
    }

    /// Forgets connection `id` (its clone closed with it).
    fn leave(&self, id: u64) {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        open.1.retain(|(i, _, _)| *i != id);
    }

    /// Shuts every open connection down: a read or write blocked on one returns at once.
    fn cut_all(&self) {
        let open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for (_, _, c) in &open.1 {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Accepts until a stop, each connection answered on its own thread within the caps; one
/// past a cap is answered busy and counted; at the stop the open ones are cut and joined.
pub fn accept(
    metrics: &(dyn Fn() -> String + Sync),
    diags: Option<&Diags<'_>>,
    listener: &TcpListener,
    stop: &Stop,
    (log, count, seen): (&Log, Count<'_>, &(dyn Fn(IpAddr) + Sync)),
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let listener = listener.try_clone().and_then(|l| {
        l.set_nonblocking(true)?;
        Ok(l)
    });
    let (runtime, listener) = match (runtime, listener) {
        (Ok(r), Ok(l)) => (r, l),
        (Err(e), _) | (_, Err(e)) => {
            log.warn(&format!("metrics endpoint: {e}"));
            return;
        }
    };
    let open = Open::default();
    let mut turn = TurnAway::new(log, count);
    std::thread::scope(|scope| {
        runtime.block_on(async {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => return log.warn(&format!("metrics endpoint: {e}")),
            };
            let mut turned = tokio::task::JoinSet::new();
            while !stop.requested() {
                turn.tend();
                while turned.try_join_next().is_some() {}
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                };
                let (conn, peer) = match accepted.and_then(|(c, p)| Ok((c.into_std()?, p))) {
                    Ok(a) => a,
                    Err(e) => {
                        log.warn(&format!("metrics endpoint: accept: {e}"));
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                seen(peer.ip());
                let id = match open.enter(&conn, peer.ip()) {
                    Ok(id) => id,
                    // Past the cap, or its source's: answered busy.
                    Err(Some(full)) => {
                        turn.away(peer.ip(), full);
                        if turned.len() < HELD {
                            turned.spawn(busy(conn));
                        }
                        continue;
                    }
                    Err(None) => continue,
                };
                let open = &open;
                let answering = std::thread::Builder::new().spawn_scoped(scope, move || {
                    // A client that misbehaves costs only its own answer.
                    let _ = answer(conn, HEAD_TIME, metrics, diags);
                    open.leave(id);
                });
                if answering.is_err() {
                    // No thread: the connection went with the closure, closed.
                    open.leave(id);
                }
            }
        });
        open.cut_all();
    });
    turn.say();
}

/// The answer past a cap: 503 with `Retry-After` and the diags busy mark, so `fleet diags`
/// says `node-busy`, not the proxy's `EOF` (k8s.io/apimachinery `pkg/util/proxy/transport.go`).
async fn busy(conn: TcpStream) {
    let Ok(io) = tokio_io(conn) else { return };
    let service = hyper::service::service_fn(|_| async {
        Ok::<_, std::convert::Infallible>(super::diags_server::marked(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
        ))
    });
    let served = http1(HEAD_TIME).serve_connection(io, service);
    let _ = tokio::time::timeout(HEAD_TIME + ANSWER_TIME, served).await;
}

/// One connection's server settings: the head within `head_time` and `MAX_REQUEST`, one request.
fn http1(head_time: Duration) -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(head_time)
        .max_header_size(MAX_REQUEST)
        .keep_alive(false);
    b
}

fn tokio_io(conn: TcpStream) -> std::io::Result<hyper_util::rt::TokioIo<tokio::net::TcpStream>> {
    conn.set_nonblocking(true)?;
    Ok(hyper_util::rt::TokioIo::new(
        tokio::net::TcpStream::from_std(conn)?,
    ))
}

/// Answers one connection on this thread: the head within `head_time`, `GET /metrics`,
/// `GET /diags` when on, 405 to another method, 404 to another path; sent within its time.
pub fn answer(
    conn: TcpStream,
    head_time: Duration,
    metrics: &(dyn Fn() -> String + Sync),
    diags: Option<&Diags<'_>>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::scope(|scope| {
        runtime.block_on(async {
            let io = tokio_io(conn)?;
            // When the answer must be sent by; none while a handler makes it.
            let send_by = Cell::new(Some(Instant::now() + head_time + ANSWER_TIME));
            let service = hyper::service::service_fn(|req: Request<hyper::body::Incoming>| {
                let send_by = &send_by;
                async move {
                    let (head, _) = req.into_parts();
                    // The handlers block: on a thread of their own, outside this runtime.
                    send_by.set(None);
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    std::thread::Builder::new().spawn_scoped(scope, move || {
                        let _ = tx.send(route(&head, metrics, diags));
                    })?;
                    let (answer, send_time) = rx.await.map_err(std::io::Error::other)?;
                    // The time of this answer (for a record of the last request, here).
                    send_by.set(Some(Instant::now() + send_time));
                    Ok::<_, std::io::Error>(answer)
                }
            });
            let served = http1(head_time).serve_connection(io, service);
            tokio::pin!(served);
            loop {
                tokio::select! {
                    end = &mut served => return end.map_err(std::io::Error::other),
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
                if send_by.get().is_some_and(|by| Instant::now() >= by) {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
            }
        })
    })
}

/// The answer to a request whose head is `head`, and how long it may take to send.
fn route(
    head: &hyper::http::request::Parts,
    metrics: &(dyn Fn() -> String + Sync),
    diags: Option<&Diags<'_>>,
) -> (Answer, Duration) {
    let path = head.uri.path();
    if let Some(d) = diags
        && head.method == Method::GET
        && path == crate::fleet::diags::PATH
    {
        let token = head.headers.get(crate::fleet::diags::auth::HEADER);
        return d.answer(token.and_then(|t| t.to_str().ok()));
    }
    let (status, body) = match (head.method == Method::GET, path == "/metrics") {
        (false, _) => (StatusCode::METHOD_NOT_ALLOWED, String::new()),
        (true, true) => (StatusCode::OK, metrics()),
        (true, false) => (StatusCode::NOT_FOUND, String::new()),
    };
    let mut answer = Answer::new(body.into());
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    (answer, ANSWER_TIME)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A client trickling its request head a byte at a time is cut off when its head's time
    /// (here 500 ms) is up.
    #[test]
    fn a_trickling_client_is_cut_off_when_its_heads_time_is_up() {
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
        let answered = super::answer(conn, Duration::from_millis(500), &|| "x".into(), None);
        let sent_by_then = sent.load(Ordering::SeqCst);
        client.join().expect("client");
        assert!(answered.is_err(), "served a trickling client: {answered:?}");
        // Cut off after a few bytes, not at the end of the head.
        assert!(
            sent_by_then < REQUEST.len() / 2,
            "the answer waited for the whole trickle ({sent_by_then} bytes)"
        );
    }

    const REQUEST: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

    /// Whether the server has closed `c` (end or reset), not left it open and unanswered.
    fn closed_by_server(c: &std::net::TcpStream) -> bool {
        use std::io::Read;
        c.set_nonblocking(true).expect("nonblocking");
        let got = (&*c).read(&mut [0u8; 256]);
        c.set_nonblocking(false).expect("blocking");
        !matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Serves `metrics` on loopback until `body` returns; the log's text and the counts.
    fn serving(
        metrics: &(dyn Fn() -> String + Sync),
        body: impl FnOnce(std::net::SocketAddr),
    ) -> (String, Vec<(String, u64)>) {
        use crate::duration::Stop;
        use crate::supervise::log::{Log, LogSettings};
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::open(dir.path().join("node.log"), LogSettings::default(), false);
        let stop = Stop::new();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let counted = std::sync::Mutex::new(Vec::new());
        let count = |r: &str, n: u64| counted.lock().expect("lock").push((r.to_owned(), n));
        std::thread::scope(|scope| {
            scope.spawn(|| super::accept(metrics, None, &listener, &stop, (&log, &count, &|_| {})));
            // A failed assertion stops the server too, so the test fails rather than waits.
            let _stop = crate::supervise::shared_tests::StopOnDrop(&stop);
            body(addr);
        });
        let text = fs_err::read_to_string(dir.path().join("node.log")).unwrap_or_default();
        (text, counted.into_inner().expect("lock"))
    }

    /// Idle clients and one that never closes do not delay a scrape.
    #[test]
    fn idle_and_lingering_clients_do_not_delay_a_scrape() {
        use std::io::Read;
        use std::net::TcpStream;
        let metrics = || "m 1\n".to_owned();
        serving(&metrics, |addr| {
            // All from one address: the idle, the lingering and the scrape within its share.
            let idle: Vec<TcpStream> = (0..super::PER_SOURCE - 2)
                .map(|_| TcpStream::connect(addr).expect("connect"))
                .collect();
            // Answered 404, and never closed by the client.
            let mut lingering = TcpStream::connect(addr).expect("connect");
            lingering
                .write_all(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("send");
            let mut scrape = TcpStream::connect(addr).expect("connect");
            scrape.write_all(REQUEST).expect("send");
            // Only against a hang: the assertions are on what is read and what is still open.
            scrape
                .set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let mut answer = String::new();
            let read = scrape.read_to_string(&mut answer);
            let still_open = idle.iter().filter(|c| !closed_by_server(c)).count();
            assert!(read.is_ok(), "{read:?}");
            assert!(answer.ends_with("m 1\n"), "{answer}");
            assert_eq!(
                still_open,
                idle.len(),
                "the scrape waited for the idle clients"
            );
        });
    }

    /// One past `PER_SOURCE` is answered 503 busy at once (with `Retry-After` and the diags
    /// busy mark), said and counted; the held one is answered when let go.
    #[test]
    fn a_connection_past_its_sources_cap_is_answered_busy_at_once() {
        use super::PER_SOURCE;
        use std::io::Read;
        use std::net::TcpStream;
        use std::sync::{Mutex, mpsc};
        let (entered, held) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let entered = Mutex::new(entered);
        let metrics = || {
            let _ = entered.lock().expect("lock").send(());
            let _ = released.lock().expect("lock").recv();
            "m 1\n".to_owned()
        };
        let (said, counted) = serving(&metrics, |addr| {
            let mut first = TcpStream::connect(addr).expect("connect");
            first.write_all(REQUEST).expect("send");
            held.recv().expect("the answer is held");
            let _idle: Vec<TcpStream> = (1..PER_SOURCE)
                .map(|_| TcpStream::connect(addr).expect("connect"))
                .collect();
            let mut past = TcpStream::connect(addr).expect("connect");
            // A whole request: were it taken in, its answer would be held as the first's is.
            let _ = past.write_all(b"GET /diags HTTP/1.1\r\nHost: x\r\n\r\n");
            // Only against a hang: the assertion is on what is read.
            past.set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let mut busy = String::new();
            let got = past.read_to_string(&mut busy);
            drop(release);
            let mut answer = String::new();
            first.read_to_string(&mut answer).expect("answer");
            assert!(got.is_ok(), "the connection past the cap: {got:?} {busy}");
            let head = busy.to_ascii_lowercase();
            assert!(
                busy.starts_with("HTTP/1.1 503 Service Unavailable\r\n")
                    && head.contains("\r\nretry-after: 10\r\n")
                    && head.contains("\r\ncalicoctl-win-diags: busy\r\n")
                    && busy.ends_with("\r\n\r\n"),
                "{busy:?}"
            );
            assert!(
                answer.starts_with("HTTP/1.1 200") && answer.ends_with("m 1\n"),
                "{answer}"
            );
        });
        assert!(
            said.contains("answered 1 connection(s) 503 busy") && said.contains("127.0.0.1"),
            "{said}"
        );
        assert_eq!(counted, [("per-source-cap".to_owned(), 1)]);
    }

    /// One address holds at most `PER_SOURCE`, another comes in beside it, one that left makes
    /// room, and all hold at most `CONNECTIONS`.
    #[test]
    fn one_source_holds_its_share_and_all_at_most_the_cap() {
        use super::{CONNECTIONS, Full, Open, PER_SOURCE};
        use std::net::{IpAddr, TcpStream};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let conns: Vec<TcpStream> = (0..=CONNECTIONS)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let source = |n: usize| IpAddr::from([10, 0, 0, u8::try_from(n).expect("small")]);
        let open = Open::default();
        let ids: Vec<u64> = conns[..PER_SOURCE]
            .iter()
            .map(|c| open.enter(c, source(1)).expect("within its share"))
            .collect();
        let past = open.enter(&conns[PER_SOURCE], source(1));
        assert_eq!(past, Err(Some(Full::Source)));
        let other = open.enter(&conns[PER_SOURCE], source(2));
        assert!(other.is_ok(), "another source comes in beside it");
        open.leave(ids[0]);
        assert!(open.enter(&conns[0], source(1)).is_ok(), "room again");
        // Up to the cap from sources of their own, then a new source is refused too.
        let held = PER_SOURCE + 1;
        for (i, c) in conns[held..CONNECTIONS].iter().enumerate() {
            assert!(open.enter(c, source(3 + i)).is_ok(), "{i}");
        }
        let past = open.enter(&conns[CONNECTIONS], source(200));
        assert_eq!(past, Err(Some(Full::All)));
    }

    /// A port another program holds is kept with its pid and address; an excluded range is
    /// told apart. (The holder of either family is named by `host::listen`'s tests.)
    #[test]
    fn a_refused_port_is_kept_with_its_holders_pid_or_as_excluded() {
        use crate::duration::Stop;
        use crate::health::metrics_findings::endpoint_down;
        use crate::host::listen::ListenRefusal;
        use crate::host::sim::SimHost;
        use crate::supervise::log::{Log, LogSettings};
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        for (settings, want, said) in [
            (
                serde_json::json!({"tcp_listeners": {port.to_string(): 4242}}),
                ListenRefusal::Held {
                    pid: Some(4242),
                    at: Some(([0, 0, 0, 0], port).into()),
                },
                format!("(process 4242 listens on it at 0.0.0.0:{port} (IPv4))"),
            ),
            (
                serde_json::json!({"excluded_tcp_ports": [[port - 1, port + 1]]}),
                ListenRefusal::Excluded,
                "an excluded port range".to_owned(),
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
            assert!(text.contains(&said), "{text}");
        }
    }
}
